// SPDX-License-Identifier: GPL-3.0-or-later
// Induction, duplicate- and previous-token scores on hand-made heads whose answers are known,
// and against plain loops over a random pattern in the test.
#include "attnscope/induction_scores.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "attnscope/error.h"
#include "synthetic_attention.h"

namespace attnscope {
namespace {

// Tokens 5 6 7 5 6 7: queries t = 3, 4, 5 repeat with s = t - 3 (s + 1 < t each).
const std::vector<int64_t> kRepeated = {5, 6, 7, 5, 6, 7};

// Layer 0: head 0 copies s + 1 (the induction head), head 1 is uniform over the causal keys.
// Layer 1: head 0 attends to t - 1 (previous token), head 1 attends to s (duplicate token).
// Rows without a repeat attend to key 0 (layer 0 head 0) or to themselves (layer 1 head 1).
float handMade(int l, int, int h, int t, int k) {
  const bool repeat = t >= 3;
  const int s = t - 3;
  if (l == 0 && h == 0) return k == (repeat ? s + 1 : 0) ? 1.0f : 0.0f;
  if (l == 0 && h == 1) return k <= t ? 1.0f / static_cast<float>(t + 1) : 0.0f;
  if (l == 1 && h == 0) return k == (t == 0 ? 0 : t - 1) ? 1.0f : 0.0f;
  return k == (repeat ? s : t) ? 1.0f : 0.0f;
}

TEST(InductionScores, KnownHeads) {
  const AttentionGroup g = syntheticGroup(2, 2, 6, {kRepeated}, handMade);
  const InductionScores s = inductionScores(g);
  ASSERT_EQ(s.layers, 2);
  ASSERT_EQ(s.heads, 2);
  EXPECT_EQ(s.repeatedPositions, 3);
  // The copying head: 1 at every repeat. Its previous-token weight: only t = 1 (key 0 = t - 1).
  EXPECT_NEAR(s.inductionAt(0, 0), 1.0, 1e-12);
  EXPECT_NEAR(s.duplicateAt(0, 0), 0.0, 1e-12);
  EXPECT_NEAR(s.previousAt(0, 0), 1.0 / 5, 1e-12);
  // Uniform: A[t, ·] = 1/(t+1), the same for s + 1, s and t - 1.
  const double repeatsMean = (1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 3;
  EXPECT_NEAR(s.inductionAt(0, 1), repeatsMean, 1e-7);
  EXPECT_NEAR(s.duplicateAt(0, 1), repeatsMean, 1e-7);
  EXPECT_NEAR(s.previousAt(0, 1), (1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6) / 5, 1e-7);
  // Previous-token head: s + 1 = t - 2 here, so no induction credit.
  EXPECT_NEAR(s.previousAt(1, 0), 1.0, 1e-12);
  EXPECT_NEAR(s.inductionAt(1, 0), 0.0, 1e-12);
  // Duplicate-token head.
  EXPECT_NEAR(s.duplicateAt(1, 1), 1.0, 1e-12);
  EXPECT_NEAR(s.inductionAt(1, 1), 0.0, 1e-12);
  EXPECT_NEAR(s.previousAt(1, 1), 0.0, 1e-12);
}

TEST(InductionScores, UsesTheMostRecentEarlierOccurrence) {
  // 1 2 1 3 1: t = 2 has s = 0; t = 4 has s = 2 (not 0), so s + 1 = 3.
  const std::vector<int64_t> ids = {1, 2, 1, 3, 1};
  const AttentionGroup g = syntheticGroup(1, 1, 5, {ids}, [](int, int, int, int t, int k) {
    const int target = t == 2 ? 1 : t == 4 ? 3 : 0;
    return k == target ? 1.0f : 0.0f;
  });
  const InductionScores s = inductionScores(g);
  EXPECT_EQ(s.repeatedPositions, 2);
  EXPECT_NEAR(s.inductionAt(0, 0), 1.0, 1e-12);
}

TEST(InductionScores, AdjacentRepeatDoesNotCount) {
  // 4 4 9: t = 1 has s = 0 but s + 1 = t, so nothing qualifies and the scores are 0.
  const AttentionGroup g = syntheticGroup(1, 1, 3, {{4, 4, 9}}, [](int, int, int, int t, int k) {
    return k <= t ? 1.0f / static_cast<float>(t + 1) : 0.0f;
  });
  const InductionScores s = inductionScores(g);
  EXPECT_EQ(s.repeatedPositions, 0);
  EXPECT_EQ(s.inductionAt(0, 0), 0.0);
  EXPECT_EQ(s.duplicateAt(0, 0), 0.0);
  EXPECT_NEAR(s.previousAt(0, 0), (0.5 + 1.0 / 3) / 2, 1e-7);
}

// Independent loops: scan backwards from t for the most recent match.
TEST(InductionScores, MatchesPlainLoopsOnPaddedItem) {
  const std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9};
  const int n = static_cast<int>(ids.size()), stored = n + 3;
  const auto cell = [](int l, int b, int h, int q, int k) {
    if (k > q) return 0.0f;
    const auto w = [&](int key) {
      return 1.0f + static_cast<float>((l * 131 + b * 17 + h * 29 + q * 7 + key * 13) % 11);
    };
    float sum = 0;
    for (int key = 0; key <= q; ++key) sum += w(key);
    return w(k) / sum;
  };
  const AttentionGroup g = syntheticGroup(3, 2, stored, {positionIds(4), ids}, cell);
  const InductionScores s = inductionScores(g, 1);
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 2; ++h) {
      double ind = 0, dup = 0, prev = 0;
      int count = 0;
      for (int t = 0; t < n; ++t) {
        if (t >= 1) prev += cell(l, 1, h, t, t - 1);
        for (int s0 = t - 1; s0 >= 0; --s0) {
          if (ids[static_cast<std::size_t>(s0)] != ids[static_cast<std::size_t>(t)]) continue;
          if (s0 + 1 < t) {
            ind += cell(l, 1, h, t, s0 + 1);
            dup += cell(l, 1, h, t, s0);
            ++count;
          }
          break;
        }
      }
      ASSERT_EQ(s.repeatedPositions, count);
      EXPECT_NEAR(s.inductionAt(l, h), ind / count, 1e-5);
      EXPECT_NEAR(s.duplicateAt(l, h), dup / count, 1e-5);
      EXPECT_NEAR(s.previousAt(l, h), prev / (n - 1), 1e-5);
    }
  }
}

TEST(InductionScores, RefusesCrossAttentionAndBadItem) {
  AttentionGroup g =
      syntheticGroup(1, 1, 3, {{1, 2, 1}}, [](int, int, int, int, int) { return 0.0f; });
  EXPECT_THROW(inductionScores(g, 1), Error);
  g.contextTokens = g.tokens;
  EXPECT_THROW(inductionScores(g), Error);
}

}  // namespace
}  // namespace attnscope
