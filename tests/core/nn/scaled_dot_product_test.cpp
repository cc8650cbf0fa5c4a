// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/scaled_dot_product.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn_test_util.h"
#include "runtime/trace_recorder.h"
#include "sdpa_reference.h"

namespace attnscope {
namespace {

using test::expectAllNear;
using test::loopMask;
using test::randomTensor;
using test::Reference;
using test::referenceSdpa;
using test::shapeOf;
using test::stepNames;

struct Inputs {
  torch::Tensor q, k, v;
};

/// Scaled by 3 so that softmax is peaked and a wrong scale, bias or mask shows.
Inputs randomInputs(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t hd, uint32_t seed) {
  return {randomTensor({B, H, Tq, hd}, seed, 3.0), randomTensor({B, H, Tk, hd}, seed + 1, 3.0),
          randomTensor({B, H, Tk, hd}, seed + 2)};
}

void expectRowsSumToOne(const torch::Tensor& attention) {
  const torch::Tensor sums = attention.sum(-1);
  expectAllNear(sums, std::vector<double>(static_cast<std::size_t>(sums.numel()), 1.0), 1e-5,
                "row sums");
}

/// The rows are peaked: the largest weight averages well above uniform, so the test data is not
/// too flat for errors to hide.
void expectPeaked(const std::vector<double>& attention, int64_t Tk) {
  double sumMax = 0;
  const std::size_t rows = attention.size() / static_cast<std::size_t>(Tk);
  for (std::size_t r = 0; r < rows; ++r) {
    double m = 0;
    for (int64_t j = 0; j < Tk; ++j)
      m = std::max(m, attention[r * static_cast<std::size_t>(Tk) + j]);
    sumMax += m;
  }
  EXPECT_GT(sumMax / static_cast<double>(rows), 0.6);
}

TEST(ScaledDotProduct, ScaledWithoutBiasOrMaskMatchesLoopsAndTracesEachStep) {
  const int64_t B = 2, H = 3, T = 5, hd = 4;
  const Inputs in = randomInputs(B, H, T, T, hd, 11);
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const int qs = rec.record("q", "q", "input", in.q), ks = rec.record("k", "k", "input", in.k),
            vs = rec.record("v", "v", "input", in.v);
  SdpaOptions o;
  o.scale = 1.0 / std::sqrt(double(hd));
  o.scaleText = "1 / math.sqrt(hd)";
  const ScaledDotProduct r = scaledDotProduct(in.q, in.k, in.v, o, rec, qs, ks, vs);

  const Reference want = referenceSdpa(in.q, in.k, in.v, o.scale, {}, {});
  expectPeaked(want.attention, T);
  EXPECT_EQ(shapeOf(r.values), (std::vector<int64_t>{B, H, T, hd}));
  EXPECT_EQ(shapeOf(r.attention), (std::vector<int64_t>{B, H, T, T}));
  expectAllNear(r.scores, want.scores, 1e-5, "scores");
  expectAllNear(r.attention, want.attention, 1e-5, "attention");
  expectAllNear(r.values, want.values, 1e-5, "values");
  expectRowsSumToOne(r.attention);

  EXPECT_EQ(stepNames(trace),
            (std::vector<std::string>{"q", "k", "v", "scores", "scaled", "attention", "values"}));
  EXPECT_EQ(trace.steps[3].inputs, (std::vector<int>{qs, ks}));
  EXPECT_EQ(trace.steps[4].inputs, (std::vector<int>{3}));
  EXPECT_EQ(trace.steps[5].inputs, (std::vector<int>{4}));
  EXPECT_EQ(trace.steps[6].inputs, (std::vector<int>{5, vs}));
  EXPECT_EQ(r.valuesStep, 6);
  for (int s = 3; s <= 5; ++s)
    EXPECT_EQ(trace.steps[s].shape, (std::vector<int64_t>{B, H, T, T})) << s;
  EXPECT_EQ(trace.steps[6].shape, (std::vector<int64_t>{B, H, T, hd}));
  for (const TraceStep& s : trace.steps) EXPECT_EQ(s.head, -1) << s.name;
}

TEST(ScaledDotProduct, BiasAndCausalMaskMatchLoopsAndMaskedEntriesAreExactlyZero) {
  const int64_t B = 2, H = 3, T = 6, hd = 4;
  const Inputs in = randomInputs(B, H, T, T, hd, 21);
  SdpaOptions o;
  o.scale = 0.5;
  o.scaleText = "hd**-0.5";
  o.bias = randomTensor({1, H, T, T}, 24, 2.0);
  o.biasText = "alibi";
  o.mask = loopMask(1, T, T, /*causal=*/true, {int(T)});  // [1, 1, T, T], broadcast over the batch
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const ScaledDotProduct r = scaledDotProduct(in.q, in.k, in.v, o, rec, -1, -1, -1);

  const Reference want =
      referenceSdpa(in.q, in.k, in.v, 0.5, o.bias, loopMask(B, T, T, true, {int(T), int(T)}));
  expectAllNear(r.scores, want.scores, 1e-5, "scores");
  expectAllNear(r.attention, want.attention, 1e-5, "attention");
  expectAllNear(r.values, want.values, 1e-5, "values");
  expectRowsSumToOne(r.attention);
  const auto a = r.attention.accessor<float, 4>();
  const auto s = r.scores.accessor<float, 4>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = i + 1; j < T; ++j) {
          EXPECT_EQ(a[b][h][i][j], 0.0f) << b << h << i << j;
          EXPECT_EQ(s[b][h][i][j], -std::numeric_limits<float>::infinity());
        }
  // The bias is what makes the reference differ from an unbiased one: it was not ignored.
  const Reference unbiased =
      referenceSdpa(in.q, in.k, in.v, 0.5, {}, loopMask(B, T, T, true, {int(T), int(T)}));
  double diff = 0;
  for (std::size_t i = 0; i < unbiased.attention.size(); ++i)
    diff = std::max(diff, std::abs(unbiased.attention[i] - want.attention[i]));
  EXPECT_GT(diff, 0.05);

  EXPECT_EQ(stepNames(trace), (std::vector<std::string>{"scores", "scaled", "biased", "masked",
                                                        "attention", "values"}));
  EXPECT_EQ(trace.steps[2].op, "scores + alibi");
  for (int st = 0; st < 5; ++st)
    EXPECT_EQ(trace.steps[st].shape, (std::vector<int64_t>{B, H, T, T}));
  EXPECT_EQ(trace.steps[5].shape, (std::vector<int64_t>{B, H, T, hd}));
}

TEST(ScaledDotProduct, WritesIntoTheGivenBuffers) {
  const int64_t L = 2, B = 2, H = 2, T = 5, hd = 4;
  const Inputs in = randomInputs(B, H, T, T, hd, 31);
  // As a model does: layer 1 of an [L, B, H, T, T] result.
  const torch::Tensor allAttention = torch::zeros({L, B, H, T, T}),
                      allScores = torch::zeros({L, B, H, T, T});
  SdpaOptions o;
  o.scale = 0.5;
  o.scaleText = "0.5";
  o.mask = loopMask(B, T, T, true, {5, 3});
  o.buffers.attention = allAttention[1];
  o.buffers.scores = allScores[1];
  TraceRecorder none(nullptr);
  const ScaledDotProduct r = scaledDotProduct(in.q, in.k, in.v, o, none, -1, -1, -1);

  EXPECT_EQ(r.attention.data_ptr(), o.buffers.attention.data_ptr());
  EXPECT_EQ(r.scores.data_ptr(), o.buffers.scores.data_ptr());
  EXPECT_EQ(r.valuesStep, -1);
  const Reference want = referenceSdpa(in.q, in.k, in.v, 0.5, {}, o.mask.dense());
  expectAllNear(allAttention[1], want.attention, 1e-5, "attention buffer");
  expectAllNear(allScores[1], want.scores, 1e-5, "scores buffer");
  expectAllNear(r.values, want.values, 1e-5, "values");
  EXPECT_EQ(allAttention[0].abs().sum().item<float>(), 0.0f) << "layer 0 untouched";
  EXPECT_EQ(allScores[0].abs().sum().item<float>(), 0.0f) << "layer 0 untouched";
  // Padded keys of item 1 get no weight.
  const auto a = allAttention.accessor<float, 5>();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 3; j < T; ++j) EXPECT_EQ(a[1][1][h][i][j], 0.0f);

  // Only the attention buffer: scores are allocated, attention still lands in the buffer.
  SdpaOptions o2 = o;
  const torch::Tensor attention2 = torch::zeros({B, H, T, T});
  o2.buffers = AttentionBuffers();
  o2.buffers.attention = attention2;
  const ScaledDotProduct r2 = scaledDotProduct(in.q, in.k, in.v, o2, none, -1, -1, -1);
  EXPECT_EQ(r2.attention.data_ptr(), attention2.data_ptr());
  expectAllNear(attention2, want.attention, 1e-5, "attention-only buffer");
  expectAllNear(r2.scores, want.scores, 1e-5, "allocated scores");
}

TEST(ScaledDotProduct, MoreKeysThanQueriesWithPaddingAndNoScaleStep) {
  // T5 style: unscaled (scale 1, no text), so no "scaled" step; cross-attention Tq != Tk.
  const int64_t B = 2, H = 3, Tq = 3, Tk = 7, hd = 5;
  const Inputs in = randomInputs(B, H, Tq, Tk, hd, 41);
  SdpaOptions o;
  o.bias = randomTensor({1, H, Tq, Tk}, 44);
  o.mask = loopMask(B, Tq, Tk, false, {7, 4});
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const ScaledDotProduct r = scaledDotProduct(in.q, in.k, in.v, o, rec, -1, -1, -1);

  const Reference want = referenceSdpa(in.q, in.k, in.v, 1.0, o.bias, o.mask.dense());
  EXPECT_EQ(shapeOf(r.attention), (std::vector<int64_t>{B, H, Tq, Tk}));
  EXPECT_EQ(shapeOf(r.values), (std::vector<int64_t>{B, H, Tq, hd}));
  expectAllNear(r.scores, want.scores, 1e-5, "scores");
  expectAllNear(r.attention, want.attention, 1e-5, "attention");
  expectAllNear(r.values, want.values, 1e-5, "values");
  expectRowsSumToOne(r.attention);
  EXPECT_EQ(r.attention.slice(-1, 4).select(0, 1).abs().max().item<float>(), 0.0f) << "padded keys";
  EXPECT_EQ(stepNames(trace),
            (std::vector<std::string>{"scores", "biased", "masked", "attention", "values"}));
  EXPECT_EQ(trace.steps[0].shape, (std::vector<int64_t>{B, H, Tq, Tk}));
  EXPECT_EQ(trace.steps[4].shape, (std::vector<int64_t>{B, H, Tq, hd}));
}

TEST(ScaledDotProduct, PerHeadBranchUsesTheTutorialNames) {
  // One head at a time: q [B, T, hd]; the trace names follow the textbook (wei, out).
  const int64_t B = 2, T = 4, hd = 3;
  const torch::Tensor q = randomTensor({B, T, hd}, 51, 3.0), k = randomTensor({B, T, hd}, 52, 3.0),
                      v = randomTensor({B, T, hd}, 53);
  SdpaOptions o;
  o.scale = 1.0 / std::sqrt(3.0);
  o.scaleText = "C**-0.5";
  o.mask = loopMask(1, T, T, true, {int(T)})[0];  // [1, T, T]
  o.head = 2;
  LayerTrace trace;
  TraceRecorder rec(&trace);
  const ScaledDotProduct r = scaledDotProduct(q, k, v, o, rec, -1, -1, -1);
  const Reference want = referenceSdpa(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), o.scale, {},
                                       loopMask(B, T, T, true, {int(T), int(T)}));
  expectAllNear(r.attention, want.attention, 1e-5, "attention");
  expectAllNear(r.values, want.values, 1e-5, "values");
  EXPECT_EQ(stepNames(trace),
            (std::vector<std::string>{"wei", "scaled", "masked", "attention", "out"}));
  for (const TraceStep& s : trace.steps) EXPECT_EQ(s.head, 2) << s.name;
  EXPECT_EQ(trace.steps[4].shape, (std::vector<int64_t>{B, T, hd}));
}

// The head mask scales each head's values (attention @ v) and nothing else: a 0 gives exactly 0,
// a 1 leaves the values bit for bit, a 0.5 halves them; the per-head branch reads its own entry.
TEST(ScaledDotProduct, HeadMaskScalesEachHeadsValuesOnly) {
  const int64_t B = 2, H = 3, T = 4, hd = 2;
  const Inputs in = randomInputs(B, H, T, T, hd, 61);
  TraceRecorder none(nullptr);
  SdpaOptions o;
  o.scale = 0.5;
  const ScaledDotProduct plain = scaledDotProduct(in.q, in.k, in.v, o, none, -1, -1, -1);
  o.buffers.headMask = torch::tensor({1.0f, 0.0f, 0.5f});
  const ScaledDotProduct masked = scaledDotProduct(in.q, in.k, in.v, o, none, -1, -1, -1);
  EXPECT_TRUE(torch::equal(masked.attention, plain.attention));
  EXPECT_TRUE(torch::equal(masked.values.select(1, 0), plain.values.select(1, 0)));
  EXPECT_EQ(masked.values.select(1, 1).abs().max().item<float>(), 0.0f);
  EXPECT_GT(plain.values.select(1, 1).abs().max().item<float>(), 0.0f);
  EXPECT_TRUE(torch::equal(masked.values.select(1, 2), plain.values.select(1, 2) * 0.5f));

  o.head = 1;  // one head's [B, T, hd]: its entry of the mask, 0
  const ScaledDotProduct one = scaledDotProduct(in.q.select(1, 1), in.k.select(1, 1),
                                                in.v.select(1, 1), o, none, -1, -1, -1);
  EXPECT_EQ(one.values.abs().max().item<float>(), 0.0f);
}

TEST(ScaledDotProduct, SoftcapCapsTheKeptScoresBeforeTheMaskInBothKernels) {
  // Gemma 2's attn_logit_softcapping: cap·tanh(scaled / cap), then the mask. hd 16 takes the
  // AVX-512 kernels where the CPU has them, hd 4 ATen's products inside the blocked kernel.
  const double cap = 2.0;
  for (const int64_t hd : {4, 16}) {
    for (const SdpaKernel kernel : {SdpaKernel::Reference, SdpaKernel::Blocked}) {
      const int64_t B = 2, H = 2, T = 7;
      const Inputs in = randomInputs(B, H, T, T, hd, 41);
      SdpaOptions o;
      o.scale = 1.0;
      o.scaleText = "1";
      o.softcap = cap;
      o.kernel = kernel;
      o.mask = loopMask(B, T, T, /*causal=*/true, {int(T), 5});
      LayerTrace trace;
      TraceRecorder rec(&trace);
      const ScaledDotProduct r = scaledDotProduct(in.q, in.k, in.v, o, rec, -1, -1, -1);
      const std::string where =
          "hd " + std::to_string(hd) + ", kernel " + std::to_string(static_cast<int>(kernel));

      const Reference want = referenceSdpa(in.q, in.k, in.v, 1.0, {}, o.mask.dense(), cap);
      expectAllNear(r.scores, want.scores, 1e-5, "capped scores, " + where);
      expectAllNear(r.attention, want.attention, 1e-5, "attention, " + where);
      expectAllNear(r.values, want.values, 1e-5, "values, " + where);
      const torch::Tensor finite = r.scores.masked_select(torch::isfinite(r.scores));
      EXPECT_LE(finite.abs().max().item<float>(), cap) << where;
      EXPECT_EQ(r.scores.isneginf().sum().item<int64_t>(),
                o.mask.dense().isneginf().sum().item<int64_t>() * H)
          << "the mask still hides its cells, " << where;
      // Uncapped, these scores reach far past the cap: leaving the cap out is a visible mistake.
      const Reference uncapped = referenceSdpa(in.q, in.k, in.v, 1.0, {}, o.mask.dense());
      double diff = 0;
      for (std::size_t i = 0; i < uncapped.attention.size(); ++i)
        diff = std::max(diff, std::abs(uncapped.attention[i] - want.attention[i]));
      EXPECT_GT(diff, 0.1) << where;
      EXPECT_EQ(stepNames(trace), (std::vector<std::string>{"scores", "scaled", "capped", "masked",
                                                            "attention", "values"}))
          << where;
      EXPECT_EQ(trace.steps[2].op, "2 * tanh(scores / 2)");
      EXPECT_EQ(trace.steps[2].kind, "softcap");
    }
  }
}
}  // namespace
}  // namespace attnscope
