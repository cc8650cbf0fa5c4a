// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/mlp.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nn_test_util.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target
// that define the same helper names.
namespace mlp_test {

using test::randomTensor;
using test::toDoubles;

constexpr int64_t B = 2, T = 3, C = 4, F = 6;

torch::nn::Linear linear(int64_t in, int64_t out, uint32_t seed) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard noGrad;
  l->weight.copy_(randomTensor({out, in}, seed));
  l->bias.copy_(randomTensor({out}, seed + 100));
  return l;
}

/// x [rows, in] · Wᵀ + b with loops.
std::vector<double> loopLinear(const std::vector<double>& x, const torch::nn::Linear& l) {
  const std::vector<double> w = toDoubles(l->weight), b = toDoubles(l->bias);
  const std::size_t out = b.size(), in = w.size() / out, rows = x.size() / in;
  std::vector<double> y;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double s = b[o];
      for (std::size_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y.push_back(s);
    }
  return y;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double silu(double x) { return x / (1.0 + std::exp(-x)); }

MlpProjection projection(torch::nn::Linear l, const std::string& expression) {
  return {[l](const torch::Tensor& x) mutable { return l->forward(x); }, expression};
}

TEST(FeedForward, PlainIsDownOfActOfUp) {
  const torch::nn::Linear up = linear(C, F, 1), down = linear(F, C, 2);
  const torch::Tensor x = randomTensor({B, T, C}, 3, 2.0);
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const int in = rec.record("x", "x", "input", x);
  int outStep = -1;
  const torch::Tensor y =
      feedForward(x, projection(up, "self.c_fc(x)"), Activation::Gelu,
                  projection(down, "self.c_proj(h)"), nullptr, rec, in, &outStep);
  std::vector<double> h = loopLinear(toDoubles(x), up);
  for (double& v : h) v = gelu(v);
  const std::vector<double> want = loopLinear(h, down);
  EXPECT_EQ(test::shapeOf(y), (std::vector<int64_t>{B, T, C}));
  test::expectAllNear(y, want, 1e-5, "plain mlp");

  EXPECT_EQ(test::stepNames(trace),
            (std::vector<std::string>{"x", "mlp_fc", "mlp_act", "mlp_out"}));
  EXPECT_EQ(outStep, 3);
  EXPECT_EQ(trace.steps[1].op, "self.c_fc(x)");
  EXPECT_EQ(trace.steps[2].op, activationExpression(Activation::Gelu));
  EXPECT_EQ(trace.steps[3].op, "self.c_proj(h)");
  EXPECT_EQ(trace.steps[1].inputs, (std::vector<int>{0}));
  EXPECT_EQ(trace.steps[2].inputs, (std::vector<int>{1}));
  EXPECT_EQ(trace.steps[3].inputs, (std::vector<int>{2}));
  EXPECT_EQ(trace.steps[1].shape, (std::vector<int64_t>{B, T, F}));
  EXPECT_EQ(trace.steps[2].shape, (std::vector<int64_t>{B, T, F}));
  EXPECT_EQ(trace.steps[3].shape, (std::vector<int64_t>{B, T, C}));
}

TEST(FeedForward, GatedIsDownOfActOfGateTimesUp) {
  const torch::nn::Linear gate = linear(C, F, 11), up = linear(C, F, 12), down = linear(F, C, 13);
  const torch::Tensor x = randomTensor({B, T, C}, 14, 2.0);
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const int in = rec.record("x", "x", "input", x);
  int outStep = -1;
  const MlpProjection g = projection(gate, "self.gate_proj(x)");
  const torch::Tensor y = feedForward(x, projection(up, "self.up_proj(x)"), Activation::Silu,
                                      projection(down, "self.down_proj(h)"), &g, rec, in, &outStep);
  const std::vector<double> gv = loopLinear(toDoubles(x), gate), uv = loopLinear(toDoubles(x), up);
  std::vector<double> h;
  for (std::size_t i = 0; i < gv.size(); ++i) h.push_back(silu(gv[i]) * uv[i]);
  test::expectAllNear(y, loopLinear(h, down), 1e-5, "gated mlp");
  // The activation goes on the gate, not on the up projection.
  std::vector<double> swapped;
  for (std::size_t i = 0; i < gv.size(); ++i) swapped.push_back(gv[i] * silu(uv[i]));
  const std::vector<double> wrong = loopLinear(swapped, down), got = toDoubles(y);
  double diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::abs(got[i] - wrong[i]));
  EXPECT_GT(diff, 1e-2);

  EXPECT_EQ(test::stepNames(trace), (std::vector<std::string>{"x", "mlp_gate", "mlp_act", "mlp_up",
                                                              "mlp_gated", "mlp_out"}));
  EXPECT_EQ(outStep, 5);
  EXPECT_EQ(trace.steps[1].inputs, (std::vector<int>{0}));
  EXPECT_EQ(trace.steps[2].inputs, (std::vector<int>{1}));
  EXPECT_EQ(trace.steps[3].inputs, (std::vector<int>{0}));
  EXPECT_EQ(trace.steps[4].inputs, (std::vector<int>{2, 3}));
  EXPECT_EQ(trace.steps[5].inputs, (std::vector<int>{4}));
  for (int s = 1; s <= 4; ++s)
    EXPECT_EQ(trace.steps[s].shape, (std::vector<int64_t>{B, T, F})) << s;
  EXPECT_EQ(trace.steps[5].shape, (std::vector<int64_t>{B, T, C}));

  // Without a trace it computes the same.
  TraceRecorder none(nullptr);
  const torch::Tensor y2 = feedForward(x, projection(up, ""), Activation::Silu,
                                       projection(down, ""), &g, none, -1, &outStep);
  EXPECT_TRUE(torch::allclose(y, y2, 0.0, 0.0));
  EXPECT_EQ(outStep, -1);
  // The activation step may carry the family's name.
  LayerTrace named;
  TraceRecorder namedRec(&named);
  feedForward(x, projection(up, ""), Activation::Silu, projection(down, ""), &g, namedRec, -1,
              &outStep, "act_fn");
  EXPECT_EQ(test::stepNames(named),
            (std::vector<std::string>{"mlp_gate", "act_fn", "mlp_up", "mlp_gated", "mlp_out"}));
}

}  // namespace mlp_test
}  // namespace attnscope
