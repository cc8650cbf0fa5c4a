// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/piece_labels.h"

#include "attnscope/utf8.h"

namespace attnscope {

std::vector<std::string> pieceLabels(const std::vector<std::string>& bytes) {
  std::vector<std::string> labels(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    if (isValidUtf8(bytes[i])) {
      labels[i] = readableLabel(bytes[i]);
      ++i;
      continue;
    }
    // Grow the run until it is valid UTF-8: a character has at most 4 bytes, and a token that
    // ends one character may start the next, so look a few tokens ahead.
    std::string run = bytes[i];
    std::size_t j = i + 1;
    while (j < bytes.size() && j - i < 8 && !isValidUtf8(run)) run += bytes[j++];
    if (!isValidUtf8(run)) {
      labels[i] = readableLabel(bytes[i]);
      ++i;
      continue;
    }
    const std::string label = readableLabel(run);
    for (std::size_t k = i; k < j; ++k) labels[k] = label;
    i = j;
  }
  return labels;
}

}  // namespace attnscope
