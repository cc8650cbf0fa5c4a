// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_mask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "nn_test_util.h"

namespace attnscope {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The expected mask [B, 1, Tq, Tk] as doubles: a key is visible when it is real, not in the
/// future (causal) and inside the window; a row with no visible key keeps key 0.
std::vector<double> loopMask(const MaskOptions& o) {
  const int64_t B = static_cast<int64_t>(o.keyLengths.size());
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < o.queries; ++i) {
      std::vector<double> row;
      bool any = false;
      for (int64_t j = 0; j < o.keys; ++j) {
        bool visible = j < o.keyLengths[static_cast<std::size_t>(b)];
        if (o.causal && j > i) visible = false;
        if (o.slidingWindow > 0 && !(j > i - o.slidingWindow)) visible = false;
        if (o.windowRadius >= 0 && std::abs(i - j) > o.windowRadius) visible = false;
        any |= visible;
        row.push_back(visible ? 0.0 : -kInf);
      }
      if (!any) row[0] = 0.0;
      out.insert(out.end(), row.begin(), row.end());
    }
  }
  return out;
}

void expectMask(const MaskOptions& o, const std::string& what) {
  const torch::Tensor m = buildMask(o).dense();
  ASSERT_TRUE(m.defined()) << what;
  EXPECT_EQ(m.scalar_type(), torch::kFloat) << what;
  EXPECT_EQ(test::shapeOf(m),
            (std::vector<int64_t>{int64_t(o.keyLengths.size()), 1, o.queries, o.keys}))
      << what;
  test::expectAllNear(m, loopMask(o), 0.0, what);  // exact: 0 or -inf
  // Never an all -inf row.
  const auto a = m.accessor<float, 4>();
  for (int64_t b = 0; b < m.size(0); ++b)
    for (int64_t i = 0; i < o.queries; ++i) {
      bool any = false;
      for (int64_t j = 0; j < o.keys; ++j) any |= a[b][0][i][j] == 0.0f;
      EXPECT_TRUE(any) << what << ": row " << b << "," << i << " is all -inf";
    }
}

MaskOptions options(std::vector<int> lengths, int64_t Tq, int64_t Tk, bool causal,
                    int64_t window = 0) {
  MaskOptions o;
  o.keyLengths = std::move(lengths);
  o.queries = Tq;
  o.keys = Tk;
  o.causal = causal;
  o.slidingWindow = window;
  return o;
}

TEST(AttentionMask, CausalHidesFutureKeys) {
  const MaskOptions o = options({6, 6}, 6, 6, true);
  expectMask(o, "causal");
  const torch::Tensor m = buildMask(o).dense();
  EXPECT_EQ(m[0][0][2][3].item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(m[0][0][3][3].item<float>(), 0.0f);
  EXPECT_EQ(m[1][0][5][0].item<float>(), 0.0f);
}

TEST(AttentionMask, PaddingHidesKeysAtAndPastTheLength) {
  expectMask(options({6, 3, 1}, 6, 6, false), "padding");
  expectMask(options({6, 2}, 3, 6, false), "padding, Tq < Tk");
  const torch::Tensor m = buildMask(options({6, 3}, 4, 6, false)).dense();
  EXPECT_EQ(m[1][0][0][2].item<float>(), 0.0f);
  EXPECT_EQ(m[1][0][0][3].item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(m[0][0][3][5].item<float>(), 0.0f);
}

TEST(AttentionMask, SlidingWindowKeepsTheLastWindowKeys) {
  // Query i sees keys j with i - window < j <= i.
  const MaskOptions o = options({8}, 8, 8, true, 3);
  expectMask(o, "causal sliding window");
  const torch::Tensor m = buildMask(o).dense();
  const auto a = m.accessor<float, 4>();
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j)
      EXPECT_EQ(a[0][0][i][j] == 0.0f, j <= i && j > i - 3) << i << "," << j;
  // Without causal: only keys too far in the past are hidden.
  expectMask(options({8}, 8, 8, false, 3), "sliding window alone");
  // A window as long as the sequence hides nothing beyond the causal mask.
  test::expectAllNear(buildMask(options({5}, 5, 5, true, 5)).dense(),
                      loopMask(options({5}, 5, 5, true)), 0.0, "window == T");
}

TEST(AttentionMask, CausalPaddingAndWindowCombine) {
  expectMask(options({7, 4, 0}, 7, 7, true, 3), "causal + padding + window");
  expectMask(options({7, 5}, 7, 7, true), "causal + padding");
  expectMask(options({9, 6}, 9, 9, false, 4), "padding + window");
}

TEST(AttentionMask, TwoSidedWindowKeepsKeysWithinTheRadius) {
  // ModernBERT's local layers: query i sees keys |i - j| <= radius, before and after it.
  MaskOptions o = options({8}, 8, 8, false);
  o.windowRadius = 2;
  expectMask(o, "two-sided window");
  const torch::Tensor m = buildMask(o).dense();
  const auto a = m.accessor<float, 4>();
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j)
      EXPECT_EQ(a[0][0][i][j] == 0.0f, std::abs(i - j) <= 2) << i << "," << j;
  // With padding: the padded queries of item 1 past 3 + 2 see no real key and keep key 0.
  o = options({9, 3}, 9, 9, false);
  o.windowRadius = 2;
  expectMask(o, "two-sided window + padding");
  o.windowRadius = 0;
  expectMask(o, "radius 0: each query itself");
  // A radius reaching every key hides nothing: no mask at all without padding.
  o = options({5}, 5, 5, false);
  o.windowRadius = 4;
  EXPECT_FALSE(buildMask(o).defined());
  o.windowRadius = 3;
  expectMask(o, "radius T - 2");
}

TEST(AttentionMask, RowsWithNothingVisibleKeepKeyZero) {
  // Item 1 has no real key: every row of it would be all -inf.
  const torch::Tensor m = buildMask(options({4, 0}, 4, 4, true)).dense();
  const auto a = m.accessor<float, 4>();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a[1][0][i][0], 0.0f) << i;
    for (int64_t j = 1; j < 4; ++j)
      EXPECT_EQ(a[1][0][i][j], -std::numeric_limits<float>::infinity());
  }
  // Padded queries past the length of a causal item: keys 0..len-1 stay visible as usual.
  const torch::Tensor padded = buildMask(options({2}, 4, 4, true)).dense();
  const auto b = padded.accessor<float, 4>();
  EXPECT_EQ(b[0][0][3][1], 0.0f);
  EXPECT_EQ(b[0][0][3][2], -std::numeric_limits<float>::infinity());
  // In a window, key 0 is hidden from queries that see other keys (Mistral).
  const torch::Tensor windowed = buildMask(options({6}, 6, 6, true, 2)).dense();
  const auto w = windowed.accessor<float, 4>();
  EXPECT_EQ(w[0][0][5][0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(w[0][0][5][4], 0.0f);
}

TEST(AttentionMask, NothingMaskedGivesAnUndefinedTensor) {
  EXPECT_FALSE(buildMask(options({5, 5}, 5, 5, false)).defined());
  EXPECT_FALSE(buildMask(options({5, 5}, 3, 5, false)).defined());
  EXPECT_FALSE(buildMask(options({5}, 5, 5, false, 5)).defined()) << "window covering every key";
  EXPECT_FALSE(buildMask(options({5}, 5, 5, false, 9)).defined());
  EXPECT_TRUE(buildMask(options({5, 4}, 5, 5, false)).defined());
  EXPECT_TRUE(buildMask(options({5}, 5, 5, false, 4)).defined());
}

TEST(AttentionMask, CausalMaskOfOneSequence) {
  for (int64_t T : {1, 2, 7}) {
    const torch::Tensor m = causalMask(T);
    ASSERT_TRUE(m.defined());
    EXPECT_EQ(test::shapeOf(m), (std::vector<int64_t>{1, 1, T, T}));
    std::vector<double> want;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) want.push_back(j <= i ? 0.0 : -kInf);
    test::expectAllNear(m, want, 0.0, "causalMask(" + std::to_string(T) + ")");
  }
}

}  // namespace
}  // namespace attnscope
