// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cmath>

#include "nn/compute_weight.h"
#include "nn/conv1d.h"
#include "nn/layer_norm.h"
#include "nn/rms_norm.h"
#include "nn_test_util.h"

namespace attnscope {
namespace {

using test::expectAllNear;
using test::randomTensor;
using test::toDoubles;

constexpr int64_t kDim = 8;

/// x [N..., dim] with a per-row offset and spread, so that mean and variance matter.
torch::Tensor normInput(uint32_t seed) {
  torch::Tensor x = randomTensor({2, 3, kDim}, seed, 3.0);
  return x + torch::arange(6, torch::kFloat).view({2, 3, 1});
}

std::vector<double> loopRmsNorm(const torch::Tensor& x, const std::vector<double>& w, double eps) {
  const std::vector<double> v = toDoubles(x);
  std::vector<double> out(v.size());
  for (std::size_t r = 0; r < v.size(); r += kDim) {
    double ms = 0;
    for (int64_t i = 0; i < kDim; ++i) ms += v[r + i] * v[r + i];
    const double inv = 1.0 / std::sqrt(ms / kDim + eps);
    for (int64_t i = 0; i < kDim; ++i) out[r + i] = v[r + i] * inv * w[i];
  }
  return out;
}

std::vector<double> loopLayerNorm(const torch::Tensor& x, const std::vector<double>& w,
                                  const std::vector<double>& bias, double eps) {
  const std::vector<double> v = toDoubles(x);
  std::vector<double> out(v.size());
  for (std::size_t r = 0; r < v.size(); r += kDim) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < kDim; ++i) mean += v[r + i] / kDim;
    for (int64_t i = 0; i < kDim; ++i)
      var += (v[r + i] - mean) * (v[r + i] - mean) / kDim;  // biased
    for (int64_t i = 0; i < kDim; ++i)
      out[r + i] = (v[r + i] - mean) / std::sqrt(var + eps) * w[i] + bias[i];
  }
  return out;
}

TEST(RmsNorm, UnitOffsetScalesByOnePlusTheWeight) {
  // Gemma stores each gain as an offset from 1: x · rsqrt(mean(x²) + eps) · (1 + w).
  const double eps = 1e-6;
  RmsNorm norm(kDim, eps, /*unitOffset=*/true);
  const torch::Tensor x = normInput(3);
  const torch::Tensor w = randomTensor({kDim}, 4, 0.5);
  norm->weight.set_data(w.clone());
  std::vector<double> gain = toDoubles(w);
  for (double& g : gain) g += 1.0;
  expectAllNear(norm(x), loopRmsNorm(x, gain, eps), 1e-5, "rms norm, 1 + w");
  // Without the offset the same weight gives another answer: the test can fail.
  RmsNorm plain(kDim, eps);
  plain->weight.set_data(w.clone());
  EXPECT_GT((norm(x) - plain(x)).abs().max().item<float>(), 0.1f);
  // A BF16 weight is widened before 1 is added (1 + w in bfloat16 would round w away).
  norm->weight.set_data(w.to(torch::kBFloat16));
  std::vector<double> gainBf16 = toDoubles(w.to(torch::kBFloat16).to(torch::kFloat));
  for (double& g : gainBf16) g += 1.0;
  expectAllNear(norm(x), loopRmsNorm(x, gainBf16, eps), 1e-5, "rms norm, 1 + bf16 w");
}

TEST(RmsNorm, MatchesLoopsWithFloatAndBf16Weights) {
  const double eps = 1e-6;
  RmsNorm norm(kDim, eps);
  EXPECT_EQ(norm->weight.scalar_type(), torch::kFloat);
  const torch::Tensor x = normInput(1);
  const torch::Tensor w = randomTensor({kDim}, 2) + 1.0;
  norm->weight.set_data(w.clone());
  const torch::Tensor y = norm(x);
  EXPECT_EQ(test::shapeOf(y), test::shapeOf(x));
  expectAllNear(y, loopRmsNorm(x, toDoubles(w), eps), 1e-5, "rms norm");
  // Not a mean-subtracting norm: a LayerNorm would give a different answer on this input.
  EXPECT_GT((y - norm(x - x.mean(-1, true))).abs().max().item<float>(), 0.1f);

  // A BF16 checkpoint: the parameter stays BF16, the result is that of its float value.
  const torch::Tensor wRounded = w.to(torch::kBFloat16).to(torch::kFloat);
  norm->weight.set_data(w.to(torch::kBFloat16));
  const torch::Tensor yBf16 = norm(x);
  EXPECT_EQ(norm->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(yBf16.scalar_type(), torch::kFloat);
  expectAllNear(yBf16, loopRmsNorm(x, toDoubles(wRounded), eps), 1e-5, "rms norm, bf16 weight");
  norm->weight.set_data(wRounded);
  EXPECT_TRUE(torch::allclose(yBf16, norm(x), 0.0, 1e-7));

  // Large eps is really added inside the root.
  RmsNorm wide(kDim, 0.5);
  wide->weight.set_data(w.clone());
  expectAllNear(wide(x), loopRmsNorm(x, toDoubles(w), 0.5), 1e-5, "rms norm, eps 0.5");
}

TEST(LayerNorm, WithoutAffineHasNoParametersAndOnlyNormalises) {
  LayerNorm norm(kDim, 1e-5, /*affine=*/false);
  EXPECT_TRUE(norm->parameters().empty());
  const torch::Tensor x = normInput(6);
  const std::vector<double> ones(kDim, 1.0), zeros(kDim, 0.0);
  expectAllNear(norm(x), loopLayerNorm(x, ones, zeros, 1e-5), 1e-5, "layer norm, no affine");
}

TEST(LayerNorm, MatchesLoopsWithFloatAndBf16Weights) {
  const double eps = 1e-5;
  LayerNorm norm(kDim, eps);
  const torch::Tensor x = normInput(3);
  const torch::Tensor w = randomTensor({kDim}, 4) + 1.0, b = randomTensor({kDim}, 5);
  norm->weight.set_data(w.clone());
  norm->bias.set_data(b.clone());
  const torch::Tensor y = norm(x);
  expectAllNear(y, loopLayerNorm(x, toDoubles(w), toDoubles(b), eps), 1e-5, "layer norm");

  const torch::Tensor wRounded = w.to(torch::kBFloat16).to(torch::kFloat),
                      bRounded = b.to(torch::kBFloat16).to(torch::kFloat);
  norm->weight.set_data(w.to(torch::kBFloat16));
  norm->bias.set_data(b.to(torch::kBFloat16));
  const torch::Tensor yBf16 = norm(x);
  EXPECT_EQ(norm->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(yBf16.scalar_type(), torch::kFloat);
  expectAllNear(yBf16, loopLayerNorm(x, toDoubles(wRounded), toDoubles(bRounded), eps), 1e-5,
                "layer norm, bf16 weights");
  norm->weight.set_data(wRounded);
  norm->bias.set_data(bRounded);
  EXPECT_TRUE(torch::allclose(yBf16, norm(x), 0.0, 1e-7));
}

TEST(ComputeWeight, FloatPassesThroughAndCompactDtypesWiden) {
  const torch::Tensor w = randomTensor({3, 4}, 6);
  const torch::Tensor same = computeWeight(w);
  EXPECT_EQ(same.data_ptr(), w.data_ptr()) << "float32 weights are not copied";
  EXPECT_FALSE(computeWeight(torch::Tensor()).defined());
  for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
    const torch::Tensor compact = w.to(dtype);
    const torch::Tensor wide = computeWeight(compact);
    EXPECT_EQ(wide.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(wide, compact.to(torch::kFloat)));
    EXPECT_EQ(compact.scalar_type(), dtype) << "the stored weight is left compact";
  }
}

TEST(ComputeWeight, LinearForwardAndConv1DWithCompactWeightsMatchLoops) {
  const int64_t in = 4, out = 3;
  const torch::Tensor x = randomTensor({2, 5, in}, 7);
  const torch::Tensor w = randomTensor({out, in}, 8).to(torch::kBFloat16),  // Linear: [out, in]
      b = randomTensor({out}, 9).to(torch::kBFloat16);
  const std::vector<double> xv = toDoubles(x), wv = toDoubles(w), bv = toDoubles(b);
  std::vector<double> want;
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = bv[o];
      for (int64_t i = 0; i < in; ++i) s += xv[r * in + i] * wv[o * in + i];
      want.push_back(s);
    }
  const torch::Tensor y = linearForward(x, w, b);
  EXPECT_EQ(test::shapeOf(y), (std::vector<int64_t>{2, 5, out}));
  expectAllNear(y, want, 1e-5, "linearForward, bf16");
  // Conv1D stores the same weight transposed: [in, out].
  Conv1D conv(in, out);
  conv->weight.set_data(w.t().contiguous());
  conv->bias.set_data(b.clone());
  const torch::Tensor yc = conv(x);
  EXPECT_EQ(test::shapeOf(yc), (std::vector<int64_t>{2, 5, out}));
  expectAllNear(yc, want, 1e-5, "Conv1D, bf16");
}

}  // namespace
}  // namespace attnscope
