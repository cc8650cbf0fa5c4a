// SPDX-License-Identifier: GPL-3.0-or-later
// Expected values are worked out by hand in the comments, not taken from the code under test.
#include "attnscope/head_statistics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "attnscope/error.h"

#include "synthetic_attention.h"

namespace attnscope {
namespace {

// A causal 3×3 pattern:
//   [1    0    0  ]
//   [0.5  0.5  0  ]
//   [0.25 0.25 0.5]
const std::vector<float> kCausal = {1, 0, 0, 0.5f, 0.5f, 0, 0.25f, 0.25f, 0.5f};

MatrixView view(const std::vector<float>& data, int queries, int keys, int stride) {
  return MatrixView{data.data(), queries, keys, stride};
}

TEST(HeadStatistics, CausalPatternByHand) {
  const HeadStatistics s = headStatistics(view(kCausal, 3, 3, 3));
  // Rows: 0, ln 2, 0.5 ln 4 + 0.5 ln 2 = 1.5 ln 2; mean 2.5 ln 2 / 3.
  EXPECT_NEAR(s.entropy, 2.5 * std::log(2.0) / 3, 1e-6);
  // Rows: 0, 0.5·1, 0.25·2 + 0.25·1 = 0.75; mean 1.25 / 3.
  EXPECT_NEAR(s.meanDistance, 1.25 / 3, 1e-6);
  // Row maxima 1, 0.5, 0.5.
  EXPECT_NEAR(s.maxWeight, 2.0 / 3, 1e-6);
  // a10 = 0.5, a21 = 0.25 over the two queries that have a previous token.
  EXPECT_NEAR(s.previousToken, 0.375, 1e-6);
  // 1, 0.5, 0.5.
  EXPECT_NEAR(s.diagonal, 2.0 / 3, 1e-6);
  // 1, 0.5, 0.25.
  EXPECT_NEAR(s.firstToken, 1.75 / 3, 1e-6);
}

TEST(HeadStatistics, UniformRowHasEntropyLogN) {
  const std::vector<float> uniform(4 * 4, 0.25f);
  const HeadStatistics s = headStatistics(view(uniform, 4, 4, 4));
  EXPECT_NEAR(s.entropy, std::log(4.0), 1e-6);
  // Row q: 0.25 Σ_k |q − k| = 0.25·{6, 4, 4, 6}; mean 0.25·5 = 1.25.
  EXPECT_NEAR(s.meanDistance, 1.25, 1e-6);
  EXPECT_NEAR(s.firstToken, 0.25, 1e-6);
}

TEST(HeadStatistics, StrideSkipsPaddingColumns) {
  // Two real tokens stored with stride 3; the third column and row are padding (garbage here).
  const std::vector<float> padded = {0.5f, 0.5f, 9, 0, 1, 9, 9, 9, 9};
  const HeadStatistics s = headStatistics(view(padded, 2, 2, 3));
  // Row maxima 0.5 and 1; the 9s of the padding never count.
  EXPECT_NEAR(s.maxWeight, 0.75, 1e-6);
  EXPECT_NEAR(s.entropy, std::log(2.0) / 2, 1e-6);
  EXPECT_NEAR(s.diagonal, 0.75, 1e-6);
  EXPECT_NEAR(s.previousToken, 0.0, 1e-6);
}

TEST(HeadStatistics, EmptyMatrixIsAllZero) {
  const HeadStatistics s = headStatistics(MatrixView{});
  EXPECT_EQ(s.entropy, 0);
  EXPECT_EQ(s.maxWeight, 0);
}

TEST(JensenShannon, KnownValues) {
  const float a[] = {1, 0}, b[] = {0, 1}, c[] = {0.5f, 0.5f};
  EXPECT_NEAR(jensenShannonDistance(a, a, 2), 0.0, 1e-7);
  EXPECT_NEAR(jensenShannonDistance(a, b, 2), 1.0, 1e-7);  // disjoint supports: the maximum
  // M = (0.75, 0.25); KL(a‖M) = log2(4/3) = 0.415037; KL(c‖M) = 0.5 log2(2/3) + 0.5 = 0.207519;
  // JSD = 0.311278; distance = sqrt(JSD).
  EXPECT_NEAR(jensenShannonDistance(a, c, 2), std::sqrt(0.311278), 1e-5);
  EXPECT_NEAR(jensenShannonDistance(c, a, 2), jensenShannonDistance(a, c, 2), 1e-9);
}

TEST(JensenShannon, RenormalisesInputs) {
  const float a[] = {2, 0}, c[] = {1, 1};
  EXPECT_NEAR(jensenShannonDistance(a, c, 2), std::sqrt(0.311278), 1e-5);
}

TEST(JensenShannon, MeanOverCommonPrefix) {
  // A is 3×3 (kCausal); B is 2×2 = [[1,0],[0,1]]. Common prefix: 2 queries × 2 keys.
  // Row 0: [1,0] vs [1,0] → 0. Row 1: [0.5,0.5] vs [0,1] → sqrt(0.311278). Mean: half of that.
  const std::vector<float> b = {1, 0, 0, 1};
  const double d = meanJensenShannonDistance(view(kCausal, 3, 3, 3), view(b, 2, 2, 2));
  EXPECT_NEAR(d, std::sqrt(0.311278) / 2, 1e-5);
}

TEST(HeadSimilarity, IdenticalHeadsAreOneAndMatrixIsSymmetric) {
  AttentionResult r;
  r.group().attention = FloatTensor({1, 1, 3, 2, 2});
  const float heads[3][4] = {{1, 0, 0.5f, 0.5f}, {1, 0, 0.5f, 0.5f}, {1, 0, 0, 1}};
  for (int h = 0; h < 3; ++h)
    for (int i = 0; i < 4; ++i)
      r.group().attention.data[static_cast<std::size_t>(h) * 4 + i] = heads[h][i];
  r.group().queryLengths = {2};
  r.group().keyLengths = {2};
  const std::vector<double> s = headSimilarity(r.group(), 0);
  ASSERT_EQ(s.size(), 9u);
  EXPECT_NEAR(s[0 * 3 + 1], 1.0, 1e-7);
  EXPECT_NEAR(s[0 * 3 + 2], 1.0 - std::sqrt(0.311278) / 2, 1e-5);
  EXPECT_NEAR(s[2 * 3 + 0], s[0 * 3 + 2], 1e-12);
  EXPECT_EQ(s[4], 1.0);
}

// Two runs of the same text: each head's distance is the mean over queries of the JS distance
// of its rows (worked out with jensenShannonDistance row by row here), 0 for an unchanged head;
// other tokens or other shapes are refused rather than compared cell by cell.
TEST(HeadDistancesBetween, PerHeadMeanOfRowDistances) {
  const auto base = [](int, int, int, int q, int k) {
    return k > q ? 0.0f : 1.0f / static_cast<float>(q + 1);  // uniform over the causal prefix
  };
  const auto changed = [&](int l, int b, int h, int q, int k) {
    // Layer 1, head 0 puts everything on the first token; every other head is unchanged.
    if (l == 1 && h == 0) return k == 0 ? 1.0f : 0.0f;
    return base(l, b, h, q, k);
  };
  const AttentionGroup a = syntheticGroup(2, 2, 3, {positionIds(3)}, base);
  const AttentionGroup b = syntheticGroup(2, 2, 3, {positionIds(3)}, changed);
  const std::vector<double> d = headDistancesBetween(a, b, 0);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], 0.0);
  EXPECT_EQ(d[1], 0.0);
  EXPECT_EQ(d[3], 0.0);
  // Rows of the uniform causal head against the one-hot first column: q = 0 equal, q = 1 and 2
  // differ.
  double want = 0;
  for (int q = 0; q < 3; ++q) {
    std::vector<float> p(3, 0.0f), r(3, 0.0f);
    for (int k = 0; k <= q; ++k) p[static_cast<std::size_t>(k)] = 1.0f / static_cast<float>(q + 1);
    r[0] = 1.0f;
    want += jensenShannonDistance(p.data(), r.data(), q + 1);
  }
  EXPECT_NEAR(d[2], want / 3, 1e-9);
  EXPECT_GT(d[2], 0.2);

  AttentionGroup otherTokens = b;
  otherTokens.tokens[0][1].id += 1;
  EXPECT_THROW(headDistancesBetween(a, otherTokens, 0), Error);
  const AttentionGroup otherShape = syntheticGroup(1, 2, 3, {positionIds(3)}, base);
  EXPECT_THROW(headDistancesBetween(a, otherShape, 0), Error);
}

TEST(HeadView, CropsToRealTokens) {
  AttentionResult r;
  r.group().attention = FloatTensor({1, 2, 1, 4, 4});
  r.group().queryLengths = {4, 2};
  r.group().keyLengths = {4, 3};
  const MatrixView m = headView(r.group(), 0, 1, 0);
  EXPECT_EQ(m.queries, 2);
  EXPECT_EQ(m.keys, 3);
  EXPECT_EQ(m.stride, 4);
  EXPECT_EQ(m.data, r.group().attention.data.data() + 16);
}

// A layer the run did not keep (RunRequest::layers) is unknown: its statistics and its similarity
// to every head are NaN ("n/a" in the window), and the kept heads compare as in the full run.
TEST(HeadStatistics, LayersNotKeptAreUnknownNotZero) {
  const auto cell = [](int l, int, int h, int q, int k) {
    return k > q ? 0.0f : (k == (q * (l + 1) + h) % (q + 1) ? 1.0f : 0.0f);
  };
  const AttentionGroup full = syntheticGroup(3, 2, 4, {positionIds(4)}, cell);
  AttentionGroup partial = syntheticGroup(
      2, 2, 4, {positionIds(4)},
      [&](int l, int b, int h, int q, int k) { return cell(l == 0 ? 0 : 2, b, h, q, k); });
  partial.keptLayers = {0, 2};
  partial.modelLayers = 3;
  const HeadStatistics missing = headStatistics(headView(partial, 1, 0, 1));
  EXPECT_TRUE(std::isnan(missing.entropy));
  EXPECT_TRUE(std::isnan(missing.firstToken));
  const HeadStatistics kept = headStatistics(headView(partial, 2, 0, 1));
  EXPECT_EQ(kept.entropy, headStatistics(headView(full, 2, 0, 1)).entropy);
  const std::vector<double> a = headSimilarity(full, 0), b = headSimilarity(partial, 0);
  ASSERT_EQ(a.size(), b.size());
  const int n = 6;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const bool unknown = i / 2 == 1 || j / 2 == 1;
      const double v = b[static_cast<std::size_t>(i) * n + j];
      if (unknown) {
        EXPECT_TRUE(std::isnan(v)) << i << "," << j;
      } else {
        EXPECT_EQ(v, a[static_cast<std::size_t>(i) * n + j]) << i << "," << j;
      }
    }
}

}  // namespace
}  // namespace attnscope
