// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/relative_position_bias.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "nn_test_util.h"

namespace attnscope {
namespace {

/// T5's _relative_position_bucket for one relative position (key - query), with the float32
/// arithmetic transformers uses for the logarithmic buckets.
int64_t t5Bucket(int64_t relative, bool bidirectional, int64_t numBuckets, int64_t maxDistance) {
  int64_t bucket = 0, n = numBuckets, distance = 0;
  if (bidirectional) {
    n /= 2;
    if (relative > 0) bucket += n;
    distance = relative < 0 ? -relative : relative;
  } else {
    distance = relative < 0 ? -relative : 0;  // -min(relative, 0): only the past
  }
  const int64_t maxExact = n / 2;
  if (distance < maxExact) return bucket + distance;
  const float logRatio = std::log(static_cast<float>(distance) / static_cast<float>(maxExact));
  const float span = static_cast<float>(std::log(double(maxDistance) / double(maxExact)));
  const int64_t large =
      maxExact + static_cast<int64_t>(logRatio / span * static_cast<float>(n - maxExact));
  return bucket + std::min(large, n - 1);
}

TEST(RelativePositionBias, BucketsMatchT5) {
  std::vector<int64_t> rel;
  for (int64_t r = -300; r <= 300; ++r) rel.push_back(r);
  const torch::Tensor relative = torch::tensor(rel, torch::kLong);
  for (bool bidirectional : {true, false}) {
    const torch::Tensor got = relativePositionBucket(relative, bidirectional, 32, 128);
    ASSERT_EQ(got.scalar_type(), torch::kLong);
    ASSERT_EQ(got.numel(), int64_t(rel.size()));
    const auto a = got.accessor<int64_t, 1>();
    std::set<int64_t> seen;
    for (std::size_t i = 0; i < rel.size(); ++i) {
      EXPECT_EQ(a[int64_t(i)], t5Bucket(rel[i], bidirectional, 32, 128))
          << "relative " << rel[i] << (bidirectional ? " bidirectional" : " causal");
      seen.insert(a[int64_t(i)]);
    }
    // Every bucket is used over -300..300, except bidirectional bucket 16 (the future at distance
    // 0).
    EXPECT_EQ(seen.size(), bidirectional ? 31u : 32u);
    EXPECT_EQ(seen.count(16), bidirectional ? 0u : 1u);
  }
  // A few values worked out by hand (away from the bucket edges).
  const auto bucket = [](int64_t r, bool bi) {
    return relativePositionBucket(torch::tensor({r}, torch::kLong), bi, 32, 128).item<int64_t>();
  };
  EXPECT_EQ(bucket(0, true), 0);
  EXPECT_EQ(bucket(-1, true), 1);
  EXPECT_EQ(bucket(1, true), 17);
  EXPECT_EQ(bucket(-7, true), 7);
  EXPECT_EQ(bucket(7, true), 23);
  EXPECT_EQ(bucket(-127, true), 15);  // 8 + floor(8 · log(127/8) / log(16)) = 8 + 7
  EXPECT_EQ(bucket(-300, true), 15);
  EXPECT_EQ(bucket(300, true), 31);
  EXPECT_EQ(bucket(5, false), 0);  // the future is one bucket for a decoder
  EXPECT_EQ(bucket(-5, false), 5);
  EXPECT_EQ(bucket(-20, false), 17);  // 16 + floor(16 · log(20/16) / log(8)) = 16 + 1
  EXPECT_EQ(bucket(-300, false), 31);
  // Any shape.
  const torch::Tensor grid = torch::arange(-6, 6, torch::kLong).view({3, 4});
  EXPECT_EQ(test::shapeOf(relativePositionBucket(grid, true, 32, 128)),
            (std::vector<int64_t>{3, 4}));
}

TEST(RelativePositionBias, ForwardLooksUpTheBucketOfKeyMinusQuery) {
  const int64_t buckets = 32, maxDistance = 128, H = 3, Tq = 12, Tk = 40;
  for (bool bidirectional : {true, false}) {
    RelativePositionBias bias(buckets, maxDistance, H, bidirectional);
    const torch::Tensor w = test::randomTensor({buckets, H}, bidirectional ? 1 : 2);
    torch::NoGradGuard noGrad;
    bias->relative_attention_bias->weight.copy_(w);
    const torch::Tensor out = bias(Tq, Tk);
    ASSERT_EQ(test::shapeOf(out), (std::vector<int64_t>{1, H, Tq, Tk}));
    EXPECT_EQ(out.scalar_type(), torch::kFloat);
    const auto wa = w.accessor<float, 2>();
    std::vector<double> want;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t q = 0; q < Tq; ++q)
        for (int64_t k = 0; k < Tk; ++k)
          want.push_back(wa[t5Bucket(k - q, bidirectional, buckets, maxDistance)][h]);
    test::expectAllNear(out, want, 0.0, bidirectional ? "encoder bias" : "decoder bias");
  }
}

}  // namespace
}  // namespace attnscope
