// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/induction_scores.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "analysis/head_rows.h"
#include "attnscope/error.h"

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
  const int queries = group.queryLengths.empty()
                          ? group.queries()
                          : group.queryLengths[static_cast<std::size_t>(item)];
  const int keys =
      group.keyLengths.empty() ? group.keys() : group.keyLengths[static_cast<std::size_t>(item)];
  const int n = std::min({queries, keys, static_cast<int>(tokens.size())});
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
      const std::size_t cell = static_cast<std::size_t>(l) * r.heads + h;
      double induction = 0, duplicate = 0, previous = 0;
      // The rows in order, a block at a time (stored, or recomputed on demand); repeats are in
      // the order of their t.
      std::size_t next = 0;
      const bool kept = forEachRow(group, l, item, h, [&](int t, const float* row) {
        if (t >= n) return;
        for (; next < repeats.size() && repeats[next].first == t; ++next) {
          induction += row[repeats[next].second + 1];
          duplicate += row[repeats[next].second];
        }
        if (t >= 1) previous += row[t - 1];
      });
      if (!kept) {  // a layer the run did not keep: unknown, not 0
        r.induction[cell] = r.duplicateToken[cell] = r.previousToken[cell] = std::nan("");
        continue;
      }
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
