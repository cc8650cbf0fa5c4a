// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_tail.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../expect_error.h"
#include "nn_test_util.h"
#include "sdpa_reference.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target.
namespace attention_tail_test {

using test::randomTensor;
using test::toDoubles;

constexpr int64_t B = 2, H = 3, Tq = 4, Tk = 5, hd = 2, C = 7;

/// A tail whose output projection is y = merged · W + b with W [H·hd, C] (rows h·hd.. read head
/// h), so its weight by head is W.view(H, hd, C).
struct Fixture {
  torch::Tensor q = randomTensor({B, H, Tq, hd}, 1, 2.0);  // peaked attention
  torch::Tensor k = randomTensor({B, H, Tk, hd}, 2, 2.0);
  torch::Tensor v = randomTensor({B, H, Tk, hd}, 3);
  torch::Tensor w = randomTensor({H * hd, C}, 4);
  torch::Tensor b = randomTensor({C}, 5);
  AttentionTail tail() const {
    AttentionTail t;
    t.output = {[this](const torch::Tensor& m) { return torch::matmul(m, w) + b; },
                "self.o_proj(merged)",
                [this] {
                  return w.view({H, hd, C});
                }};
    return t;
  }
};

TEST(AttentionTail, IsTheOutputProjectionOfTheMergedHeads) {
  const Fixture f;
  SdpaOptions sdpa;
  sdpa.scale = 0.7;
  sdpa.mask = test::loopMask(B, Tq, Tk, false, {5, 3});
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const int qs = rec.record("q", "q", "input", f.q), ks = rec.record("k", "k", "input", f.k),
            vs = rec.record("v", "v", "input", f.v);
  int outStep = -1;
  const torch::Tensor y = attentionTail({f.q, f.k, f.v, qs, ks, vs}, sdpa, f.tail(), rec, &outStep);

  const test::Reference r = test::referenceSdpa(f.q, f.k, f.v, 0.7, {}, sdpa.mask.dense());
  const std::vector<double> w = toDoubles(f.w), bias = toDoubles(f.b);
  std::vector<double> want;
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t c = 0; c < C; ++c) {
        double s = bias[static_cast<std::size_t>(c)];
        for (int64_t h = 0; h < H; ++h)  // merged[b, i, h·hd + d] = values[b, h, i, d]
          for (int64_t d = 0; d < hd; ++d)
            s += r.values[static_cast<std::size_t>(((bi * H + h) * Tq + i) * hd + d)] *
                 w[static_cast<std::size_t>((h * hd + d) * C + c)];
        want.push_back(s);
      }
  EXPECT_EQ(test::shapeOf(y), (std::vector<int64_t>{B, Tq, C}));
  test::expectAllNear(y, want, 1e-5, "attention tail output");

  ASSERT_EQ(outStep, static_cast<int>(trace.steps.size()) - 1);
  const TraceStep& out = trace.steps.back();
  EXPECT_EQ(out.name, "attn_out");
  EXPECT_EQ(out.op, "self.o_proj(merged)");
  const TraceStep& merged = trace.steps[static_cast<std::size_t>(out.inputs.at(0))];
  EXPECT_EQ(merged.name, "merged");
  EXPECT_EQ(merged.kind, "merge_heads");
  EXPECT_EQ(merged.shape, (std::vector<int64_t>{B, Tq, H * hd}));
}

TEST(AttentionTail, WritesEachHeadsValueNormsThroughItsSliceOfTheOutput) {
  const Fixture f;
  AttentionTail tail = f.tail();
  tail.valueNorms = torch::full({B, H, Tk}, -1.0f);
  TraceRecorder rec(nullptr);
  int outStep = -1;
  attentionTail({f.q, f.k, f.v, -1, -1, -1}, SdpaOptions(), tail, rec, &outStep);
  const std::vector<double> v = toDoubles(f.v), w = toDoubles(f.w);
  std::vector<double> want;
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < Tk; ++j) {
        double sq = 0;  // ‖v_j^h · W_O^h‖, without the bias
        for (int64_t c = 0; c < C; ++c) {
          double s = 0;
          for (int64_t d = 0; d < hd; ++d)
            s += v[static_cast<std::size_t>(((bi * H + h) * Tk + j) * hd + d)] *
                 w[static_cast<std::size_t>((h * hd + d) * C + c)];
          sq += s * s;
        }
        want.push_back(std::sqrt(sq));
      }
  test::expectAllNear(tail.valueNorms, want, 1e-5, "value norms");
}

TEST(AttentionTail, PrefixesItsStepsForCrossAttention) {
  const Fixture f;
  AttentionTail tail = f.tail();
  tail.stepPrefix = "cross_";
  LayerTrace trace;
  TraceRecorder rec(&trace);
  int outStep = -1;
  attentionTail({f.q, f.k, f.v, -1, -1, -1}, SdpaOptions(), tail, rec, &outStep);
  EXPECT_EQ(trace.steps.back().name, "cross_attn_out");
  EXPECT_EQ(trace.steps[trace.steps.size() - 2].name, "cross_merged");
}

TEST(AttentionTail, RefusesValueNormsWithoutTheOutputWeight) {
  const Fixture f;
  AttentionTail tail = f.tail();
  tail.output.weightByHead = nullptr;
  tail.valueNorms = torch::zeros({B, H, Tk});
  TraceRecorder rec(nullptr);
  int outStep = -1;
  test::expectError(
      [&] {
        attentionTail({f.q, f.k, f.v, -1, -1, -1}, SdpaOptions(), tail, rec, &outStep);
      },
      ErrorKind::Internal, "value norms");
}

}  // namespace attention_tail_test
}  // namespace attnscope
