// SPDX-License-Identifier: GPL-3.0-or-later
// Rollout against hand-worked matrices and against a second computation written in the test:
// it forms every Â first and multiplies from the last layer down (P = Â_{L-1}; P = P·Â_l), the
// other association of the same product, on its own loops.
#include "attnscope/attention_rollout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

#include "attnscope/error.h"
#include "synthetic_attention.h"

namespace attnscope {
namespace {

// The measured error in the test report (--gtest_output=xml), to 3 significant digits.
std::string scientific(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2e", v);
  return buffer;
}

// Causal rows of pseudo-random positive weights that sum to 1, different per (l, b, h).
float randomCausal(int l, int b, int h, int q, int k) {
  if (k > q) return 0;
  const auto w = [&](int key) {
    uint32_t x = static_cast<uint32_t>(((l * 7 + b) * 5 + h) * 1009 + q * 31 + key) * 2654435761u;
    x ^= x >> 13;
    return 0.1f + static_cast<float>(x % 1000) / 1000.0f;
  };
  float sum = 0;
  for (int key = 0; key <= q; ++key) sum += w(key);
  return w(k) / sum;
}

TEST(AttentionRollout, OneLayerOneHeadByHand) {
  // A = [[1, 0], [0.5, 0.5]] -> Â = ½A + ½I = [[1, 0], [0.25, 0.75]] (rows already sum to 1).
  const std::vector<float> a = {1, 0, 0.5f, 0.5f};
  const AttentionGroup g = syntheticGroup(
      1, 1, 2, {positionIds(2)},
      [&](int, int, int, int q, int k) { return a[static_cast<std::size_t>(q * 2 + k)]; });
  const AttentionRollout r = attentionRollout(g);
  ASSERT_EQ(r.tokens, 2);
  EXPECT_EQ(r.layers, 1);
  EXPECT_NEAR(r.at(0, 0), 1.0, 1e-12);
  EXPECT_NEAR(r.at(0, 1), 0.0, 1e-12);
  EXPECT_NEAR(r.at(1, 0), 0.25, 1e-12);
  EXPECT_NEAR(r.at(1, 1), 0.75, 1e-12);
}

TEST(AttentionRollout, TwoLayersMultiplyAndHeadsAverage) {
  // Layer 0: heads [[1,0],[1,0]] and [[1,0],[0,1]] average to [[1,0],[0.5,0.5]], Â0 as above.
  // Layer 1: both heads [[1,0],[1,0]] -> Â1 = [[1,0],[0.5,0.5]].
  // Â1·Â0 = [[1,0],[0.5 + 0.5·0.25, 0.5·0.75]] = [[1,0],[0.625,0.375]].
  const AttentionGroup g =
      syntheticGroup(2, 2, 2, {positionIds(2)}, [](int l, int, int h, int q, int k) {
        if (l == 0 && h == 1) return q == k ? 1.0f : 0.0f;
        return k == 0 ? 1.0f : 0.0f;
      });
  const AttentionRollout r = attentionRollout(g);
  EXPECT_EQ(r.layers, 2);
  EXPECT_NEAR(r.at(1, 0), 0.625, 1e-12);
  EXPECT_NEAR(r.at(1, 1), 0.375, 1e-12);
  // Up to layer 0 is Â0 alone.
  const AttentionRollout first = attentionRollout(g, 0, 0);
  EXPECT_EQ(first.layers, 1);
  EXPECT_NEAR(first.at(1, 0), 0.25, 1e-12);
}

TEST(AttentionRollout, RowsAreRenormalised) {
  // A row summing to 0.5 (not a distribution): Â row = [0.5·0.5 + 0.5, 0] / 0.75 -> [1, 0] for
  // q = 0; q = 1: [0.25·0.5, 0.25·0.5 + 0.5] / 0.75 = [1/6, 5/6].
  const AttentionGroup g = syntheticGroup(
      1, 1, 2, {positionIds(2)},
      [](int, int, int, int q, int k) { return q == 0 ? (k == 0 ? 0.5f : 0.0f) : 0.25f; });
  const AttentionRollout r = attentionRollout(g);
  EXPECT_NEAR(r.at(0, 0), 1.0, 1e-12);
  EXPECT_NEAR(r.at(1, 0), 1.0 / 6, 1e-12);
  EXPECT_NEAR(r.at(1, 1), 5.0 / 6, 1e-12);
}

// The independent computation: Â_l from its definition, then P = Â_{L-1}·…·Â_0 associated from
// the left.
std::vector<double> referenceRollout(const AttentionGroup& g, int item, int last, int n) {
  const int stored = g.queries(), heads = g.heads();
  std::vector<std::vector<double>> hats;
  for (int l = 0; l <= last; ++l) {
    std::vector<double> hat(static_cast<std::size_t>(n) * n);
    for (int q = 0; q < n; ++q) {
      double rowSum = 0;
      for (int k = 0; k < n; ++k) {
        double mean = 0;
        for (int h = 0; h < heads; ++h)
          mean +=
              g.attention
                  .data[((((static_cast<std::size_t>(l) * g.batch() + item) * heads + h) * stored +
                          q) *
                         stored) +
                        k];
        hat[static_cast<std::size_t>(q) * n + k] = 0.5 * mean / heads + (q == k ? 0.5 : 0);
        rowSum += hat[static_cast<std::size_t>(q) * n + k];
      }
      for (int k = 0; k < n; ++k) hat[static_cast<std::size_t>(q) * n + k] /= rowSum;
    }
    hats.push_back(hat);
  }
  std::vector<double> p = hats.back();
  for (int l = last - 1; l >= 0; --l) {
    std::vector<double> next(p.size(), 0.0);
    for (int i = 0; i < n; ++i)
      for (int m = 0; m < n; ++m)
        for (int j = 0; j < n; ++j)
          next[static_cast<std::size_t>(i) * n + j] +=
              p[static_cast<std::size_t>(i) * n + m] *
              hats[static_cast<std::size_t>(l)][static_cast<std::size_t>(m) * n + j];
    p = next;
  }
  return p;
}

TEST(AttentionRollout, MatchesIndependentProductOnPaddedBatch) {
  // Item 1 has 5 real tokens stored among 7: the padding must not enter.
  const AttentionGroup g = syntheticGroup(4, 3, 7, {positionIds(7), positionIds(5)}, randomCausal);
  for (int last : {-1, 0, 2}) {
    const AttentionRollout r = attentionRollout(g, 1, last);
    ASSERT_EQ(r.tokens, 5);
    const std::vector<double> want = referenceRollout(g, 1, last < 0 ? 3 : last, 5);
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(r.values[i] - want[i]));
    RecordProperty("worst_abs_error_up_to_" + std::to_string(last), scientific(worst));
    EXPECT_LT(worst, 1e-5) << "up to layer " << last;
    for (int q = 0; q < 5; ++q) {
      double sum = 0;
      for (int k = 0; k < 5; ++k) sum += r.at(q, k);
      EXPECT_NEAR(sum, 1.0, 1e-9) << "row " << q;
      // Causal attention composes to a causal rollout.
      for (int k = q + 1; k < 5; ++k) EXPECT_EQ(r.at(q, k), 0.0);
    }
  }
}

TEST(AttentionRollout, RefusesBadRequests) {
  AttentionGroup g = syntheticGroup(2, 1, 3, {positionIds(3)}, randomCausal);
  EXPECT_THROW(attentionRollout(g, 0, 2), Error);  // layers are 0..1
  EXPECT_THROW(attentionRollout(g, 1), Error);     // one item
  try {
    attentionRollout(g, 0, 5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("layer 5 is out of range"), std::string::npos) << e.what();
  }
  g.contextTokens = g.tokens;
  g.name = "cross";
  EXPECT_THROW(attentionRollout(g), Error);
  EXPECT_THROW(attentionRollout(AttentionGroup{}), Error);
}

// A run that kept layers 0 and 2 of 3 (RunRequest::layers) holds them in slots 0 and 1.
AttentionGroup keptZeroAndTwo() {
  AttentionGroup g = syntheticGroup(
      2, 2, 4, {positionIds(4)},
      [](int l, int b, int h, int q, int k) { return randomCausal(l == 0 ? 0 : 2, b, h, q, k); });
  g.keptLayers = {0, 2};
  g.modelLayers = 3;
  return g;
}

TEST(AttentionRollout, NeedsEveryLayerBelowTheLastOne) {
  const AttentionGroup full = syntheticGroup(3, 2, 4, {positionIds(4)}, randomCausal);
  const AttentionGroup partial = keptZeroAndTwo();
  ASSERT_EQ(partial.layers(), 3);
  EXPECT_EQ(attentionRollout(partial, 0, 0).values, attentionRollout(full, 0, 0).values);
  try {
    attentionRollout(partial, 0, 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("did not keep layer 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnscope
