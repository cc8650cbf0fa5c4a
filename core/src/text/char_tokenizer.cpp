// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/char_tokenizer.h"

#include "attnscope/utf8.h"
#include "text/token_hash.h"

namespace attnscope {

std::vector<Token> CharTokenizer::encode(const std::string& text) const {
  const std::vector<CodePoint> cps = decodeUtf8(text);
  std::vector<Token> tokens;
  tokens.reserve(cps.size());
  for (std::size_t i = 0; i < cps.size();) {
    std::size_t j = i + 1;
    // Keep marks with their base, and ZWJ sequences (👩‍👩‍👧) together.
    while (j < cps.size() && (isExtendingCodePoint(cps[j].value) || cps[j - 1].value == 0x200D))
      ++j;
    // Regional-indicator pairs are one flag.
    if (j == i + 1 && j < cps.size() && cps[i].value >= 0x1F1E6 && cps[i].value <= 0x1F1FF &&
        cps[j].value >= 0x1F1E6 && cps[j].value <= 0x1F1FF) {
      ++j;
    }
    Token t;
    t.byteBegin = cps[i].byteBegin;
    t.byteEnd = cps[j - 1].byteEnd;
    t.text = text.substr(t.byteBegin, t.byteEnd - t.byteBegin);
    t.id = (j == i + 1) ? static_cast<int64_t>(cps[i].value) : tokenHashId(t.text);
    t.label = readableLabel(t.text);
    tokens.push_back(std::move(t));
    i = j;
  }
  return tokens;
}

}  // namespace attnscope
