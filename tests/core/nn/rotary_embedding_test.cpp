// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/rotary_embedding.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../expect_close.h"
#include "../expect_error.h"
#include "nn_test_util.h"

namespace attnscope {
namespace {

using test::closeTolerance;
using test::expectAllNear;
using test::randomTensor;
using test::toDoubles;

/// inv_freq[i] = 1 / theta^(2i / rot), i in [0, rot/2).
std::vector<double> loopInvFreq(double theta, int64_t rot) {
  std::vector<double> out;
  for (int64_t i = 0; i < rot / 2; ++i)
    out.push_back(1.0 / std::pow(theta, 2.0 * double(i) / double(rot)));
  return out;
}

void expectRelativelyNear(const torch::Tensor& got, const std::vector<double>& want, double rel,
                          const std::string& what) {
  const std::vector<double> g = toDoubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], rel * std::abs(want[i])) << what << " [" << i << "]";
}

/// x [B, H, T, hd] rotated at positions[t] with Hugging Face's rotate_half convention; dims at and
/// past rot pass through.
std::vector<double> loopRotate(const torch::Tensor& x, const std::vector<int64_t>& positions,
                               const std::vector<double>& inv, int64_t rot) {
  const auto a = x.accessor<float, 4>();
  const int64_t half = rot / 2, hd = x.size(3);
  std::vector<double> out;
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t h = 0; h < x.size(1); ++h)
      for (int64_t t = 0; t < x.size(2); ++t) {
        std::vector<double> row(static_cast<std::size_t>(hd));
        for (int64_t d = rot; d < hd; ++d) row[d] = a[b][h][t][d];
        for (int64_t i = 0; i < half; ++i) {
          const double angle = double(positions[t]) * inv[i], c = std::cos(angle),
                       s = std::sin(angle);
          const double x1 = a[b][h][t][i], x2 = a[b][h][t][i + half];
          row[i] = x1 * c - x2 * s;
          row[i + half] = x2 * c + x1 * s;
        }
        out.insert(out.end(), row.begin(), row.end());
      }
  return out;
}

torch::Tensor positionTensor(const std::vector<int64_t>& p) {
  return torch::tensor(p, torch::kLong);
}

RotaryOptions rotary(int64_t rot, double theta = 10000.0) {
  RotaryOptions o;
  o.rotaryDim = rot;
  o.theta = theta;
  return o;
}

TEST(RotaryEmbedding, FrequenciesAndCosSinFollowTheFormula) {
  const RotaryEmbedding rope(rotary(16));
  const std::vector<double> inv = loopInvFreq(10000.0, 16);
  expectRelativelyNear(rope.inverseFrequencies(5), inv, 1e-6, "inv_freq");
  const std::vector<int64_t> positions = {0, 3, 1, 7, 12, 20};
  const auto [cos, sin] = rope.cosSin(positionTensor(positions));
  ASSERT_EQ(test::shapeOf(cos), (std::vector<int64_t>{6, 16}));
  ASSERT_EQ(test::shapeOf(sin), (std::vector<int64_t>{6, 16}));
  std::vector<double> wantCos, wantSin;
  for (int64_t p : positions)
    for (int64_t j = 0; j < 16; ++j) {  // the frequencies repeated twice: j and j + rot/2 share one
      wantCos.push_back(std::cos(double(p) * inv[j % 8]));
      wantSin.push_back(std::sin(double(p) * inv[j % 8]));
    }
  expectAllNear(cos, wantCos, 1e-5, "cos");
  expectAllNear(sin, wantSin, 1e-5, "sin");
}

TEST(RotaryEmbedding, ApplyRotatesPairsIAndIPlusHalfAndPassesTheRestThrough) {
  const int64_t hd = 16;
  const std::vector<int64_t> positions = {0, 3, 1, 7, 12, 20};
  const torch::Tensor x = randomTensor({2, 3, 6, hd}, 1, 2.0);
  for (int64_t rot : {hd, hd / 4, hd / 2}) {
    const RotaryEmbedding rope(rotary(rot));
    const auto [cos, sin] = rope.cosSin(positionTensor(positions));
    const torch::Tensor y = RotaryEmbedding::apply(x, cos, sin);
    ASSERT_EQ(test::shapeOf(y), test::shapeOf(x));
    expectAllNear(y, loopRotate(x, positions, loopInvFreq(10000.0, rot), rot), 1e-5,
                  "rot " + std::to_string(rot));
    if (rot < hd) {
      EXPECT_TRUE(torch::equal(y.narrow(-1, rot, hd - rot), x.narrow(-1, rot, hd - rot)));
    }
  }
}

TEST(RotaryEmbedding, ApplyInterleavedRotatesNeighbouringPairsLikeGptj) {
  const int64_t hd = 16;
  const std::vector<int64_t> positions = {0, 3, 1, 7, 12, 20};
  const torch::Tensor x = randomTensor({2, 3, 6, hd}, 4, 2.0);
  for (int64_t rot : {hd, hd / 4}) {
    const RotaryEmbedding rope(rotary(rot));
    const auto [cos, sin] = rope.cosSin(positionTensor(positions));
    const torch::Tensor y = RotaryEmbedding::applyInterleaved(x, cos, sin);
    // GPT-J's rotate_every_two: dims (2i, 2i + 1) are rotated by frequency i, the rest kept.
    const std::vector<double> inv = loopInvFreq(10000.0, rot);
    const auto a = x.accessor<float, 4>();
    std::vector<double> want;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t t = 0; t < 6; ++t)
          for (int64_t d = 0; d < hd; ++d) {
            if (d >= rot) {
              want.push_back(a[b][h][t][d]);
              continue;
            }
            const double angle = double(positions[t]) * inv[d / 2], c = std::cos(angle),
                         s = std::sin(angle);
            const double even = a[b][h][t][d - d % 2], odd = a[b][h][t][d - d % 2 + 1];
            want.push_back(d % 2 == 0 ? even * c - odd * s : odd * c + even * s);
          }
    expectAllNear(y, want, 1e-5, "interleaved rot " + std::to_string(rot));
    // Not the rotate_half pairing (which this input tells apart at every position but 0).
    EXPECT_GT((y - RotaryEmbedding::apply(x, cos, sin)).abs().max().item<float>(), 0.1f);
  }
}

TEST(RotaryEmbedding, RotationKeepsEachPairsNormAndScoresDependOnTheOffsetOnly) {
  const int64_t hd = 16, T = 48, rot = 16;
  const RotaryEmbedding rope(rotary(rot));
  const auto [cos, sin] = rope.cosSin(torch::arange(T, torch::kLong));
  // The same q (and k) vector at every position.
  const torch::Tensor q = randomTensor({1, 1, 1, hd}, 2).expand({1, 1, T, hd}).contiguous();
  const torch::Tensor k = randomTensor({1, 1, 1, hd}, 3).expand({1, 1, T, hd}).contiguous();
  const torch::Tensor qRot = RotaryEmbedding::apply(q, cos, sin),
                      kRot = RotaryEmbedding::apply(k, cos, sin);
  const auto qr = qRot.accessor<float, 4>(), kr = kRot.accessor<float, 4>();
  const auto qa = q.accessor<float, 4>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < rot / 2; ++i) {
      const double before = std::hypot(qa[0][0][t][i], qa[0][0][t][i + rot / 2]);
      const double after = std::hypot(qr[0][0][t][i], qr[0][0][t][i + rot / 2]);
      EXPECT_NEAR(after, before, closeTolerance(before, 1e-5)) << t << "," << i;
    }
  const auto score = [&](int64_t m, int64_t n) {
    double s = 0;
    for (int64_t d = 0; d < hd; ++d) s += double(qr[0][0][m][d]) * kr[0][0][n][d];
    return s;
  };
  // A score sums hd = 16 products, and each rotated element's float32 rounding (angle, cos/sin,
  // products) is relative to that element: the score's error follows Σ_d |q_d k_d| (~12 here),
  // not |score|, which can cancel. So the tolerance scales with the terms: 1e-5 of them, ~1.2e-4
  // (measured: under 1e-7 of them with ATEN_CPU_CAPABILITY default, avx2 and avx512).
  const auto terms = [&](int64_t m, int64_t n) {
    double s = 0;
    for (int64_t d = 0; d < hd; ++d) s += std::abs(double(qr[0][0][m][d]) * kr[0][0][n][d]);
    return s;
  };
  for (int64_t offset : {0, 3, 11}) {
    const double first = score(offset + 1, 1);
    for (int64_t n : {4, 17, 30})
      EXPECT_NEAR(score(n + offset, n), first,
                  closeTolerance(std::max(terms(n + offset, n), terms(offset + 1, 1)), 1e-5))
          << "offset " << offset;
  }
  EXPECT_GT(std::abs(score(5, 2) - score(5, 3)), 1e-3) << "the score does depend on the offset";
}

TEST(RotaryEmbedding, LinearScalingDividesEveryFrequency) {
  RotaryOptions o = rotary(8);
  o.scaling.type = RopeScaling::Type::Linear;
  o.scaling.factor = 4.0;
  std::vector<double> want = loopInvFreq(10000.0, 8);
  for (double& f : want) f /= 4.0;
  expectRelativelyNear(RotaryEmbedding(o).inverseFrequencies(3), want, 1e-6, "linear");
}

TEST(RotaryEmbedding, DynamicScalingGrowsTheBaseOnlyPastTheTrainedContext) {
  RotaryOptions o = rotary(8);
  o.maxPositions = 16;
  o.scaling.type = RopeScaling::Type::Dynamic;
  o.scaling.factor = 2.0;
  const RotaryEmbedding rope(o);
  const std::vector<double> base = loopInvFreq(10000.0, 8);
  expectRelativelyNear(rope.inverseFrequencies(10), base, 1e-6, "dynamic, seqLen < max");
  expectRelativelyNear(rope.inverseFrequencies(16), base, 1e-6, "dynamic, seqLen == max");
  const double grown = 10000.0 * std::pow(2.0 * 40.0 / 16.0 - 1.0, 8.0 / 6.0);
  const std::vector<double> longer = loopInvFreq(grown, 8);
  expectRelativelyNear(rope.inverseFrequencies(40), longer, 1e-5, "dynamic, seqLen 40");
  // cosSin takes the sequence length from the largest position.
  const std::vector<int64_t> positions = {0, 39, 5};
  const auto [cos, sin] = rope.cosSin(positionTensor(positions));
  std::vector<double> wantCos;
  for (int64_t p : positions)
    for (int64_t j = 0; j < 8; ++j) wantCos.push_back(std::cos(double(p) * longer[j % 4]));
  expectAllNear(cos, wantCos, 1e-5, "dynamic cos");
}

TEST(RotaryEmbedding, Llama3ScalingFollowsHuggingFace) {
  RotaryOptions o = rotary(64, 500000.0);
  o.scaling.type = RopeScaling::Type::Llama3;
  o.scaling.factor = 8.0;
  o.scaling.lowFreqFactor = 1.0;
  o.scaling.highFreqFactor = 4.0;
  o.scaling.originalMaxPositions = 8192;
  const double factor = 8, low = 1, high = 4, orig = 8192;
  const double lowWavelen = orig / low, highWavelen = orig / high;
  std::vector<double> want;
  int kept = 0, slowed = 0, blended = 0;
  for (double inv : loopInvFreq(500000.0, 64)) {
    const double wavelen = 2 * M_PI / inv;
    if (wavelen > lowWavelen) {
      want.push_back(inv / factor);
      ++slowed;
    } else if (wavelen < highWavelen) {
      want.push_back(inv);
      ++kept;
    } else {
      const double smooth = (orig / wavelen - low) / (high - low);
      want.push_back((1 - smooth) * inv / factor + smooth * inv);
      ++blended;
    }
  }
  ASSERT_GT(kept, 0);
  ASSERT_GT(slowed, 0);
  ASSERT_GT(blended, 0);
  const RotaryEmbedding rope(o);
  expectRelativelyNear(rope.inverseFrequencies(100), want, 1e-5, "llama3");
  EXPECT_EQ(rope.describe(64), "rope_theta 500000, 64 of 64 dims, llama3 x8");
}

TEST(RotaryEmbedding, RejectsOddDimensionsAndBadParameters) {
  test::expectError([] { RotaryEmbedding r(rotary(7)); }, ErrorKind::Format, "rotary");
  test::expectError([] { RotaryEmbedding r(rotary(0)); }, ErrorKind::Format, "rotary");
  test::expectError([] { RotaryEmbedding r(rotary(8, 0.0)); }, ErrorKind::Format, "rope_theta");
  RotaryOptions o = rotary(8);
  o.scaling.type = RopeScaling::Type::Linear;
  o.scaling.factor = 0.0;
  test::expectError([&] { RotaryEmbedding r(o); }, ErrorKind::Format, "factor");
  EXPECT_EQ(RotaryEmbedding(rotary(16)).describe(64), "rope_theta 10000, 16 of 64 dims");
}

}  // namespace
}  // namespace attnscope
