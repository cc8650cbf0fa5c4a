// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/induction_scores.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "attnscope/error.h"
#include "attnscope/head_statistics.h"

namespace attnscope {

InductionScores inductionScores(const AttentionGroup& group, int item) {
  if (!group.contextTokens.empty())
    throw Error(ErrorKind::InvalidArgument, "induction scores need self-attention; the '" +
                                                group.name + "' group attends to another sequence");
  if (item < 0 || item >= group.batch())
    throw Error(ErrorKind::InvalidArgument, "induction scores: batch item " + std::to_string(item) +
                                                " is out of range (the batch has " +
                                                std::to_string(group.batch()) + ")");
  InductionScores r;
  r.layers = group.layers();
  r.heads = group.heads();
  const std::size_t cells = static_cast<std::size_t>(r.layers) * r.heads;
  r.induction.assign(cells, 0.0);
  r.duplicateToken.assign(cells, 0.0);
  r.previousToken.assign(cells, 0.0);
  if (cells == 0) return r;

  const std::vector<Token>& tokens = group.tokens[static_cast<std::size_t>(item)];
  const MatrixView shape = headView(group, 0, item, 0);
  const int n = std::min({shape.queries, shape.keys, static_cast<int>(tokens.size())});
  // (t, s) pairs: s is the most recent earlier position of t's id, kept when s + 1 < t.
  std::vector<std::pair<int, int>> repeats;
  std::unordered_map<int64_t, int> lastSeen;
  for (int t = 0; t < n; ++t) {
    const auto seen = lastSeen.find(tokens[static_cast<std::size_t>(t)].id);
    if (seen != lastSeen.end() && seen->second + 1 < t) repeats.emplace_back(t, seen->second);
    lastSeen[tokens[static_cast<std::size_t>(t)].id] = t;
  }
  r.repeatedPositions = static_cast<int>(repeats.size());

  for (int l = 0; l < r.layers; ++l) {
    for (int h = 0; h < r.heads; ++h) {
      const MatrixView m = headView(group, l, item, h);
      const std::size_t cell = static_cast<std::size_t>(l) * r.heads + h;
      if (m.data == nullptr) {  // a layer the run did not keep: unknown, not 0
        r.induction[cell] = r.duplicateToken[cell] = r.previousToken[cell] = std::nan("");
        continue;
      }
      double induction = 0, duplicate = 0, previous = 0;
      for (const auto& [t, s] : repeats) {
        induction += m.at(t, s + 1);
        duplicate += m.at(t, s);
      }
      for (int t = 1; t < n; ++t) previous += m.at(t, t - 1);
      if (!repeats.empty()) {
        r.induction[cell] = induction / static_cast<double>(repeats.size());
        r.duplicateToken[cell] = duplicate / static_cast<double>(repeats.size());
      }
      if (n > 1) r.previousToken[cell] = previous / (n - 1);
    }
  }
  return r;
}

}  // namespace attnscope
