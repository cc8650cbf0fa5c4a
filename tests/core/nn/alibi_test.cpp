// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/alibi.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nn_test_util.h"

namespace attnscope {
namespace {

/// Bloom's build_alibi_tensor slopes, written out: base = 2^(-(2^-(log2(n) - 3))) for the closest
/// lower power of two n, slopes base^1..base^n; the remaining heads take the odd powers 1, 3, 5, …
/// of the base for 2n.
std::vector<double> bloomSlopes(int64_t heads) {
  int64_t closest = 1;
  while (closest * 2 <= heads) closest *= 2;
  const auto baseFor = [](double n) {
    return std::pow(2.0, -std::pow(2.0, -(std::log2(n) - 3.0)));
  };
  std::vector<double> out;
  for (int64_t p = 1; p <= closest; ++p)
    out.push_back(std::pow(baseFor(double(closest)), double(p)));
  const int64_t remaining = std::min(closest, heads - closest);
  for (int64_t r = 0; r < remaining; ++r)
    out.push_back(std::pow(baseFor(2.0 * closest), double(2 * r + 1)));
  return out;
}

void expectSlopes(int64_t heads, const std::vector<double>& want) {
  const torch::Tensor s = alibiSlopes(heads);
  EXPECT_EQ(s.scalar_type(), torch::kFloat);
  ASSERT_EQ(test::shapeOf(s), (std::vector<int64_t>{heads}));
  const std::vector<double> got = test::toDoubles(s);
  for (int64_t h = 0; h < heads; ++h)
    EXPECT_NEAR(got[h], want[h], 1e-6 * want[h]) << "H " << heads << " head " << h;
}

TEST(Alibi, SlopesForAPowerOfTwo) {
  std::vector<double> want;
  for (int h = 1; h <= 8; ++h) want.push_back(1.0 / double(1 << h));  // 2^(-8h/8)
  expectSlopes(8, want);
  expectSlopes(8, bloomSlopes(8));
  std::vector<double> sixteen;
  for (int h = 1; h <= 16; ++h) sixteen.push_back(std::pow(2.0, -8.0 * h / 16.0));
  expectSlopes(16, sixteen);
}

TEST(Alibi, SlopesForOtherHeadCounts) {
  // 12 heads: the 8 slopes of 8, then slopes 1, 3, 5, 7 of 16 (2^-0.5, 2^-1.5, …).
  const std::vector<double> twelve = {0.5,
                                      0.25,
                                      0.125,
                                      0.0625,
                                      1.0 / 32,
                                      1.0 / 64,
                                      1.0 / 128,
                                      1.0 / 256,
                                      std::pow(2.0, -0.5),
                                      std::pow(2.0, -1.5),
                                      std::pow(2.0, -2.5),
                                      std::pow(2.0, -3.5)};
  expectSlopes(12, twelve);
  for (std::size_t h = 0; h < 12; ++h) EXPECT_NEAR(bloomSlopes(12)[h], twelve[h], 1e-12) << h;
  // 6 heads: the 4 slopes of 4 (2^-2h), then slopes 1 and 3 of 8.
  const std::vector<double> six = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  expectSlopes(6, six);
  for (int64_t h = 1; h <= 40; ++h) expectSlopes(h, bloomSlopes(h));
}

TEST(Alibi, BiasIsSlopeTimesKeyPositionAndZeroOnPaddedKeys) {
  const int64_t H = 4, Tk = 6;
  const torch::Tensor slopes = alibiSlopes(H);
  const std::vector<int> lengths = {6, 3, 1};
  const torch::Tensor bias = alibiBias(slopes, lengths, Tk);
  ASSERT_EQ(test::shapeOf(bias), (std::vector<int64_t>{3, H, 1, Tk}));
  const std::vector<double> s = bloomSlopes(H);
  std::vector<double> want;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < Tk; ++j) want.push_back(j < lengths[b] ? s[h] * double(j) : 0.0);
  test::expectAllNear(bias, want, 1e-6, "alibi bias");
  test::expectAllNear(slopes, s, 1e-7, "slopes unchanged by alibiBias");
}

}  // namespace
}  // namespace attnscope
