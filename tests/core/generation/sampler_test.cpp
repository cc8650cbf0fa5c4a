// SPDX-License-Identifier: GPL-3.0-or-later
// The sampling settings (attnscope/sampling.h) on hand-made distributions, against their
// definitions in Hugging Face's logits processors and warpers.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "attnscope/error.h"
#include "attnscope/sampling.h"

namespace attnscope {
namespace {

std::set<int64_t> kept(const std::vector<double>& p) {
  std::set<int64_t> s;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) s.insert(static_cast<int64_t>(i));
  return s;
}

std::vector<float> logOf(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

SamplingOptions sampling(double temperature = 1.0) {
  SamplingOptions o;
  o.temperature = temperature;
  return o;
}

TEST(Sampler, GreedyTakesTheMostLikelyAndTheLowestIdOnATieWithoutADraw) {
  SamplingOptions o;  // temperature 0
  std::mt19937_64 rng(1), untouched(1);
  EXPECT_EQ(drawToken(samplingDistribution({1, 5, 3, 5, 2}, {}, o), o, rng), 1);
  EXPECT_EQ(rng(), untouched());  // no draw consumed
  // Top-k and top-p do not apply to greedy (HF's greedy search ignores the warpers).
  o.topK = 1;
  o.topP = 0.1;
  EXPECT_EQ(kept(samplingDistribution({1, 5, 3, 5, 2}, {}, o)).size(), 5u);
}

TEST(Sampler, TopKKeepsTheKLargestLogitsAndTiesAtTheKth) {
  SamplingOptions o = sampling();
  o.topK = 2;
  EXPECT_EQ(kept(samplingDistribution({1, 5, 3, 4, 2}, {}, o)), (std::set<int64_t>{1, 3}));
  o.topK = 3;
  // 4 and 3 tie at the third largest: both stay, as in TopKLogitsWarper (scores < kth removed).
  EXPECT_EQ(kept(samplingDistribution({1, 5, 3, 4, 3}, {}, o)), (std::set<int64_t>{1, 2, 3, 4}));
  const std::vector<double> p = samplingDistribution({0, 1, 0, 2}, {}, [] {
    SamplingOptions k = sampling();
    k.topK = 2;
    return k;
  }());
  EXPECT_NEAR(p[3], std::exp(2.0) / (std::exp(1.0) + std::exp(2.0)), 1e-12);  // renormalised
}

TEST(Sampler, TopPKeepsTheSmallestSetThatReachesP) {
  const std::vector<float> logits = logOf({0.1, 0.4, 0.2, 0.3});
  SamplingOptions o = sampling();
  o.topP = 0.45;  // 0.4 alone is short of it: 0.3 crosses it and stays; 0.2 does not
  std::vector<double> p = samplingDistribution(logits, {}, o);
  EXPECT_EQ(kept(p), (std::set<int64_t>{1, 3}));
  EXPECT_NEAR(p[1], 0.4 / 0.7, 1e-6);
  o.topP = 0.35;  // the most likely alone reaches it
  EXPECT_EQ(kept(samplingDistribution(logits, {}, o)), (std::set<int64_t>{1}));
  o.topP = 0.95;
  EXPECT_EQ(kept(samplingDistribution(logits, {}, o)), (std::set<int64_t>{0, 1, 2, 3}));
  o.topP = 0.85;
  EXPECT_EQ(kept(samplingDistribution(logits, {}, o)), (std::set<int64_t>{1, 2, 3}));
}

TEST(Sampler, TopKThenTopPAsHfOrdersThem) {
  SamplingOptions o = sampling();
  o.topK = 3;    // keeps 0.4, 0.3, 0.2, renormalised to 4/9, 3/9, 2/9
  o.topP = 0.6;  // 4/9 < 0.6: 3/9 stays too
  EXPECT_EQ(kept(samplingDistribution(logOf({0.1, 0.4, 0.2, 0.3}), {}, o)),
            (std::set<int64_t>{1, 3}));
}

TEST(Sampler, TemperatureDividesTheLogits) {
  const std::vector<double> p = samplingDistribution({0, 1, 2}, {}, sampling(2.0));
  const double z = 1 + std::exp(0.5) + std::exp(1.0);
  EXPECT_NEAR(p[0], 1 / z, 1e-12);
  EXPECT_NEAR(p[2], std::exp(1.0) / z, 1e-12);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfSeenIds) {
  SamplingOptions o;
  o.repetitionPenalty = 2.0;
  // Ids 0 and 1 were seen (1 twice: penalised once); id 2 was not.
  const std::vector<double> p = samplingDistribution({2, -2, 1}, {0, 1, 1}, o);
  const double z = std::exp(1.0) + std::exp(-4.0) + std::exp(1.0);
  EXPECT_NEAR(p[0], std::exp(1.0) / z, 1e-7);
  EXPECT_NEAR(p[1], std::exp(-4.0) / z, 1e-7);
  EXPECT_NEAR(p[2], std::exp(1.0) / z, 1e-7);
}

TEST(Sampler, TheSameSeedDrawsTheSameIdsAndTheDrawFollowsTheDistribution) {
  const SamplingOptions o = sampling();
  std::vector<double> flat(1000, 1.0 / 1000);
  std::mt19937_64 a(42), b(42), c(43);
  int differ = 0;
  for (int i = 0; i < 20; ++i) {
    const int64_t x = drawToken(flat, o, a);
    EXPECT_EQ(x, drawToken(flat, o, b));
    differ += x != drawToken(flat, o, c);
  }
  EXPECT_GT(differ, 15);
  // The documented draw: u = (rng() >> 11) 2^-53, then the first id whose cumulative p exceeds u.
  std::mt19937_64 r(7), check(7);
  const double u = static_cast<double>(check() >> 11) * 0x1.0p-53;
  EXPECT_EQ(drawToken({0.5, 0.5}, o, r), u < 0.5 ? 0 : 1);
  int zeros = 0;
  for (int i = 0; i < 4000; ++i) zeros += drawToken({0.25, 0.75}, o, r) == 0;
  EXPECT_NEAR(zeros / 4000.0, 0.25, 0.03);
  // Ids the settings removed are never drawn.
  std::vector<double> p = {0.0, 0.5, 0.0, 0.5, 0.0};
  for (int i = 0; i < 200; ++i) EXPECT_EQ(drawToken(p, o, r) % 2, 1);
}

TEST(Sampler, RefusesBadSettings) {
  const auto refused = [](SamplingOptions o) {
    try {
      samplingDistribution({1, 2}, {}, o);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::InvalidArgument;
    }
    return false;
  };
  SamplingOptions o;
  o.temperature = -1;
  EXPECT_TRUE(refused(o));
  o = {};
  o.topP = 0;
  EXPECT_TRUE(refused(o));
  o = {};
  o.topK = -2;
  EXPECT_TRUE(refused(o));
  o = {};
  o.repetitionPenalty = 0;
  EXPECT_TRUE(refused(o));
  EXPECT_THROW(samplingDistribution({}, {}, SamplingOptions{}), Error);
}

TEST(Sampler, EntropyInNats) {
  EXPECT_NEAR(entropyNats({0.5, 0.5}), std::log(2.0), 1e-12);
  EXPECT_EQ(entropyNats({1.0, 0.0}), 0.0);
}

}  // namespace
}  // namespace attnscope
