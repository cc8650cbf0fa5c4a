// SPDX-License-Identifier: GPL-3.0-or-later
// The needle test's pieces: the text it builds, the tokens of a byte range, and each head's
// weight on the needle, against sums written out by hand over synthetic attention.
#include "attnscope/needle_retrieval.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../expect_error.h"
#include "synthetic_attention.h"

namespace attnscope {
namespace {

using test::expectError;

TEST(NeedleText, GoesAtTheFirstSpaceAfterTheDepthAndTheQuestionLast) {
  const NeedleText t = needleText("alpha beta gamma delta", "The key is 7.", "Key?", 0.3);
  // 0.3 * 22 = 6.6 -> 7, inside "beta": moved on to the space after it.
  EXPECT_EQ(t.text, "alpha beta The key is 7. gamma delta Key?");
  EXPECT_EQ(t.text.substr(t.needleBegin, t.needleEnd - t.needleBegin), "The key is 7.");
  EXPECT_EQ(t.text.substr(t.questionBegin, t.questionEnd - t.questionBegin), "Key?");
}

TEST(NeedleText, EndsAndNoQuestion) {
  NeedleText t = needleText("one two", "N", "", 0);
  EXPECT_EQ(t.text, "N one two");
  EXPECT_EQ(t.needleBegin, 0u);
  EXPECT_EQ(t.questionBegin, t.questionEnd);
  t = needleText("one two", "N", "Q", 1);
  EXPECT_EQ(t.text, "one two N Q");
  EXPECT_EQ(t.text.substr(t.needleBegin, 1), "N");
  // The last word is never split: no white space after the depth puts the needle at the end.
  t = needleText("one two", "N", "", 0.9);
  EXPECT_EQ(t.text, "one two N");
  EXPECT_EQ(t.at, 1.0);
  // No white space at all (é é é, 2 bytes each): the next character boundary after byte 3 of 6.
  t = needleText("\xC3\xA9\xC3\xA9\xC3\xA9", "N", "", 0.5);
  EXPECT_EQ(t.text, "\xC3\xA9\xC3\xA9 N \xC3\xA9");
  EXPECT_NEAR(t.at, 4.0 / 6, 1e-12);
}

TEST(NeedleText, RefusesAnEmptyNeedleAndADepthOutsideZeroToOne) {
  expectError([] { needleText("a b", "", "", 0.5); }, ErrorKind::InvalidArgument,
              "needle is empty");
  expectError([] { needleText("a b", "n", "", 1.5); }, ErrorKind::InvalidArgument, "[0, 1]");
  expectError([] { needleText("a b", "n", "", NAN); }, ErrorKind::InvalidArgument, "[0, 1]");
}

TEST(TokensOfBytes, TheTokensOverlappingTheRangeSpecialsAside) {
  std::vector<Token> tokens(5);
  const std::size_t bytes[5][2] = {{0, 0}, {0, 3}, {3, 6}, {6, 9}, {9, 9}};
  for (int i = 0; i < 5; ++i) {
    tokens[i].byteBegin = bytes[i][0];
    tokens[i].byteEnd = bytes[i][1];
  }
  tokens[0].special = tokens[4].special = true;  // <s> ... </s>
  EXPECT_EQ(tokensOfBytes(tokens, 4, 7), (std::vector<int>{2, 3}));
  EXPECT_EQ(tokensOfBytes(tokens, 0, 3), (std::vector<int>{1}));
  EXPECT_EQ(tokensOfBytes(tokens, 3, 3), std::vector<int>{});
}

TEST(NeedleRetrieval, MassAndTopAgainstSumsByHand) {
  // 2 layers x 2 heads over 6 tokens; the needle is keys 2 and 3, the question rows 4 and 5.
  // Head (0, 0) puts 0.6 on key 2 and spreads the rest; head (0, 1) puts 0.3 on key 3 and 0.7 on
  // key 0 (a sink); layer 1 attends uniformly.
  const auto cell = [](int l, int, int h, int q, int k) -> float {
    if (k > q) return 0.0f;
    if (l == 1) return 1.0f / static_cast<float>(q + 1);
    if (h == 0) return k == 2 ? 0.6f : 0.4f / static_cast<float>(q);
    return k == 3 ? 0.3f : (k == 0 ? 0.7f : 0.0f);
  };
  const AttentionGroup g = syntheticGroup(2, 2, 6, {positionIds(6)}, cell);
  const NeedleRetrieval r = needleRetrieval(g, 0, {2, 3}, {4, 5});
  ASSERT_EQ(r.mass.size(), 4u);
  // (0.6 + 0.4/q) for q = 4, 5, averaged.
  EXPECT_NEAR(r.mass[0], ((0.6 + 0.1) + (0.6 + 0.08)) / 2, 1e-6);
  EXPECT_NEAR(r.mass[1], 0.3, 1e-6);
  EXPECT_NEAR(r.mass[2], (2.0 / 5 + 2.0 / 6) / 2, 1e-6);
  EXPECT_NEAR(r.mass[3], (2.0 / 5 + 2.0 / 6) / 2, 1e-6);
  EXPECT_EQ(r.top[0], 1.0);
  EXPECT_EQ(r.top[1], 0.0);  // its top key is the sink
  EXPECT_EQ(r.top[2], 0.0);  // uniform: the first key wins the tie
  EXPECT_EQ(r.top[3], 0.0);
  // Rows read one at a time (not contiguous) give the same numbers.
  const NeedleRetrieval apart = needleRetrieval(g, 0, {2, 3}, {5, 3});
  EXPECT_NEAR(apart.mass[1], (0.3 + 0.3) / 2, 1e-6);
  EXPECT_NEAR(apart.mass[2], (2.0 / 6 + 2.0 / 4) / 2, 1e-6);
}

TEST(NeedleRetrieval, ALayerTheRunDidNotKeepIsNaN) {
  // Layer 1 of 2 kept only.
  AttentionGroup g =
      syntheticGroup(1, 1, 4, {positionIds(4)}, [](int, int, int, int, int) { return 0.25f; });
  g.keptLayers = {1};
  g.modelLayers = 2;
  const NeedleRetrieval r = needleRetrieval(g, 0, {1}, {3});
  ASSERT_EQ(r.mass.size(), 2u);
  EXPECT_TRUE(std::isnan(r.mass[0]));
  EXPECT_TRUE(std::isnan(r.top[0]));
  EXPECT_NEAR(r.mass[1], 0.25, 1e-6);
}

TEST(NeedleRetrieval, RefusesTokensOutsideTheItem) {
  const AttentionGroup g =
      syntheticGroup(1, 1, 4, {positionIds(3)}, [](int, int, int, int, int) { return 0.25f; });
  expectError([&] { needleRetrieval(g, 0, {3}, {2}); }, ErrorKind::InvalidArgument,
              "outside the 3 keys");
  expectError([&] { needleRetrieval(g, 0, {1}, {3}); }, ErrorKind::InvalidArgument,
              "outside the 3 queries");
  expectError([&] { needleRetrieval(g, 0, {}, {2}); }, ErrorKind::InvalidArgument, "no tokens");
  expectError([&] { needleRetrieval(g, 0, {1}, {}); }, ErrorKind::InvalidArgument,
              "no query token");
  expectError([&] { needleRetrieval(g, 1, {1}, {2}); }, ErrorKind::InvalidArgument, "out of range");
}

}  // namespace
}  // namespace attnscope
