// SPDX-License-Identifier: GPL-3.0-or-later
// Spearman's rank correlation against values worked out by hand and against 1 - 6Σd²/(n(n²-1)),
// the textbook formula for series without ties.
#include "attnscope/rank_correlation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attnscope/error.h"
#include "expect_error.h"

namespace attnscope {
namespace {

TEST(RankCorrelation, TiesShareTheirMeanRank) {
  EXPECT_EQ(ranksOf({10, 30, 20, 30}), (std::vector<double>{1, 3.5, 2, 3.5}));
  EXPECT_EQ(ranksOf({}), std::vector<double>{});
}

TEST(RankCorrelation, OrderAgreementReversalAndHandWorkedValue) {
  EXPECT_DOUBLE_EQ(spearmanCorrelation({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearmanCorrelation({1, 2, 3, 4}, {-1, -4, -9, -16}), -1.0);
  // Monotone transforms do not change ranks.
  EXPECT_DOUBLE_EQ(spearmanCorrelation({0.1, 5, 2}, {1, 1000, 3}), 1.0);
  // Ranks (1,2,3,4,5) and (2,1,4,3,5): Σd² = 4, ρ = 1 − 6·4/(5·24) = 0.8.
  EXPECT_NEAR(spearmanCorrelation({1, 2, 3, 4, 5}, {20, 10, 40, 30, 50}), 0.8, 1e-12);
  // With ties: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4), the Pearson correlation of the
  // ranks by hand: Σ(a−2.5)(b−2.5) = 2.25 + 0 + 0 + 2.25, Σ(a−2.5)² = 4.5, Σ(b−2.5)² = 5.
  EXPECT_NEAR(spearmanCorrelation({1, 2, 2, 4}, {1, 2, 3, 4}), 4.5 / std::sqrt(4.5 * 5), 1e-12);
  EXPECT_EQ(spearmanCorrelation({1, 1, 1}, {1, 2, 3}), 0.0);
  EXPECT_EQ(spearmanCorrelation({1}, {2}), 0.0);
  test::expectError(
      [] {
        spearmanCorrelation({1, 2}, {1});
      },
      ErrorKind::InvalidArgument, "different lengths");
}

TEST(RankCorrelation, MatchesTheNoTiesFormulaOnRandomSeries) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 5 + static_cast<std::size_t>(trial) * 7;
    std::vector<double> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = normal(rng);
      b[i] = 0.5 * a[i] + normal(rng);
    }
    // Ranks by counting, apart from ranksOf's sort.
    double d2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double ra = 1, rb = 1;
      for (std::size_t j = 0; j < n; ++j) {
        ra += a[j] < a[i];
        rb += b[j] < b[i];
      }
      d2 += (ra - rb) * (ra - rb);
    }
    const double nn = static_cast<double>(n);
    EXPECT_NEAR(spearmanCorrelation(a, b), 1 - 6 * d2 / (nn * (nn * nn - 1)), 1e-12) << n;
  }
}

}  // namespace
}  // namespace attnscope
