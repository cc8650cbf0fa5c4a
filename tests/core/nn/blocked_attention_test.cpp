// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/blocked_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "attnscope/error.h"
#include "nn/attention_kernels.h"
#include "nn/attention_mask.h"
#include "nn/scaled_dot_product.h"
#include "nn_test_util.h"
#include "runtime/cancel_scope.h"
#include "runtime/trace_recorder.h"
#include "sdpa_reference.h"

namespace attnscope {
namespace {

using test::expectAllNear;
using test::loopMask;
using test::randomTensor;
using test::Reference;
using test::referenceSdpa;
using test::stepNames;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Qkv {
  torch::Tensor q, k, v;
};

/// q, k, v [B, H, T, hd] as views of one fused [B, T, 3·H·hd] projection (GPT-2's layout), so
/// that none is contiguous; q and k scaled by 3 so that the softmax is peaked.
Qkv fusedViews(int64_t B, int64_t H, int64_t T, int64_t hd, uint32_t seed) {
  const torch::Tensor qkv = randomTensor({B, T, 3 * H * hd}, seed, 3.0);
  const auto split = [&](int i) {
    return qkv.narrow(2, i * H * hd, H * hd).view({B, T, H, hd}).transpose(1, 2);
  };
  return {split(0), split(1), split(2) / 3.0};
}

/// The largest weight of each row is well above uniform on average: errors cannot hide in flat
/// rows.
double meanRowMax(const torch::Tensor& attention) {
  return std::get<0>(attention.max(-1)).mean().item<double>();
}

void expectExactZerosWhereMasked(const torch::Tensor& attention, const torch::Tensor& scores,
                                 const torch::Tensor& mask) {
  const torch::Tensor hidden = mask.expand_as(attention).isinf();
  EXPECT_EQ(attention.masked_select(hidden).abs().max().item<float>(), 0.0f);
  if (scores.defined()) {
    EXPECT_TRUE(torch::all(scores.masked_select(hidden) == kNegInf).item<bool>());
  }
}

// Head widths for each test: one that ATen's products take (not a multiple of 16) and ones the
// AVX-512 kernels take (whole 16-float registers; 48 also takes the narrower value tile). On a CPU
// without AVX-512 all take ATen's.
const std::vector<int64_t> kHeadDims = {8, 48, 64};

/// Values sum hd-wide scores' rounding into every output: float32 against double loops drifts by
/// ~1e-5 at 32–64 wide, whichever kernel (ATen's products too).
double valuesTolerance(int64_t hd) { return hd < 16 ? 1e-5 : 3e-5; }

// Three row blocks of a causal decoder over 600 tokens (the later ones skip key blocks), with
// GPT-2's strided q/k/v views: attention, scores and values equal the double-precision loops.
TEST(BlockedAttention, CausalStridedInputsMatchLoops) {
  for (const int64_t hd : kHeadDims) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    const int64_t B = 2, H = 2, T = 600;
    // The scores' spread does not grow with the width (float32 rounding of the scores would).
    const double scale = 0.25 * std::sqrt(8.0 / static_cast<double>(hd));
    const Qkv in = fusedViews(B, H, T, hd, 3);
    const torch::Tensor mask = causalMask(T);  // [1, 1, T, T]
    const std::optional<BlockedAttention> r =
        blockedAttention(in.q, in.k, in.v, scale, {}, mask, {}, {}, /*wantScores=*/true);
    ASSERT_TRUE(r.has_value());
    const Reference want = referenceSdpa(in.q.contiguous(), in.k.contiguous(), in.v.contiguous(),
                                         scale, {}, loopMask(B, T, T, true, {int(T), int(T)}));
    EXPECT_GT(meanRowMax(r->attention), 0.5);
    expectAllNear(r->attention, want.attention, 1e-5, "attention");
    expectAllNear(r->values, want.values, valuesTolerance(hd), "values");
    // Finite scores against the loops; masked ones must be -inf exactly.
    const torch::Tensor finite = torch::isfinite(r->scores);
    const torch::Tensor wantScores =
        torch::tensor(want.scores, torch::kDouble).view(r->scores.sizes());
    // Relative above 1 (tolerance rule of expect_close.h): scores grow with the scaled-up q, k.
    EXPECT_LT(((r->scores.to(torch::kDouble) - wantScores).abs() / wantScores.abs().clamp_min(1.0))
                  .masked_select(finite)
                  .max()
                  .item<double>(),
              1e-4);
    expectExactZerosWhereMasked(r->attention, r->scores, mask);
    EXPECT_TRUE(r->values.is_contiguous());
    // The kernel flushes subnormals while it works, and leaves the caller's setting as it was.
    volatile float tiny = std::numeric_limits<float>::min(), half = 0.5f;
    volatile float product = tiny * half;
    EXPECT_GT(product, 0.0f);
  }
}

// Encoder style: padded keys per item, a position bias per head (ALiBi, T5), fewer queries than
// keys (cross-attention), and no scores asked for.
TEST(BlockedAttention, PaddingBiasAndMoreKeysThanQueriesMatchLoops) {
  for (const int64_t hd : {int64_t{6}, int64_t{32}}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    const int64_t B = 2, H = 3, Tq = 300, Tk = 700;
    const double scale = std::sqrt(6.0 / static_cast<double>(hd));
    const torch::Tensor q = randomTensor({B, H, Tq, hd}, 11, 3.0),
                        k = randomTensor({B, H, Tk, hd}, 12, 3.0),
                        v = randomTensor({B, H, Tk, hd}, 13);
    const torch::Tensor bias = randomTensor({1, H, Tq, Tk}, 14, 2.0);
    const torch::Tensor mask = loopMask(B, Tq, Tk, false, {700, 123});
    const std::optional<BlockedAttention> r =
        blockedAttention(q, k, v, scale, bias, mask, {}, {}, /*wantScores=*/false);
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(r->scores.defined());
    const Reference want = referenceSdpa(q, k, v, scale, bias, mask);
    EXPECT_GT(meanRowMax(r->attention), 0.5);
    expectAllNear(r->attention, want.attention, 1e-5, "attention");
    expectAllNear(r->values, want.values, valuesTolerance(hd), "values");
    expectExactZerosWhereMasked(r->attention, {}, mask);
  }
}

// Mistral's sliding window: each row block sees a band of keys, so blocks skip keys on both
// sides. The buffers are a layer of an [L, B, H, T, T] result filled with NaN first, so every
// entry, the zeros included, must be written, and nothing outside the layer.
TEST(BlockedAttention, SlidingWindowWritesEveryEntryOfTheGivenBuffers) {
  for (const int64_t hd : {int64_t{4}, int64_t{16}}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    const int64_t L = 2, B = 1, H = 2, T = 640;
    const double scale = 0.5 * std::sqrt(4.0 / static_cast<double>(hd));
    const Qkv in = fusedViews(B, H, T, hd, 21);
    MaskOptions mo;
    mo.keyLengths = {int(T)};
    mo.queries = mo.keys = T;
    mo.causal = true;
    mo.slidingWindow = 100;
    const AttentionMask runs = buildMask(mo);  // read as runs: no mask tensor in the kernel
    const torch::Tensor mask = runs.dense();
    const torch::Tensor attention = torch::full({L, B, H, T, T}, NAN),
                        scores = torch::full({L, B, H, T, T}, NAN);
    const std::optional<BlockedAttention> r = blockedAttention(
        in.q, in.k, in.v, scale, {}, runs, attention[1], scores[1], /*wantScores=*/true);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->attention.data_ptr(), attention[1].data_ptr());
    EXPECT_EQ(r->scores.data_ptr(), scores[1].data_ptr());
    EXPECT_FALSE(torch::isnan(attention[1]).any().item<bool>());
    EXPECT_FALSE(torch::isnan(scores[1]).any().item<bool>());
    EXPECT_TRUE(torch::isnan(attention[0]).all().item<bool>()) << "layer 0 untouched";
    const Reference want =
        referenceSdpa(in.q.contiguous(), in.k.contiguous(), in.v.contiguous(), scale, {}, mask);
    expectAllNear(attention[1], want.attention, 1e-5, "attention");
    expectAllNear(r->values, want.values, valuesTolerance(hd), "values");
    expectExactZerosWhereMasked(attention[1], scores[1], mask);
  }
}

// A mask of runs (what buildMask makes) is read as runs: the same bits as adding its tensor, for
// every kind of run (causal, padding of unequal items, sliding and two-sided windows, queries
// after cached keys) and both products, and no [B, 1, Tq, Tk] tensor is made on the way.
TEST(BlockedAttention, MaskRunsGiveTheBitsOfTheirTensorWithoutMakingIt) {
  struct Case {
    const char* what;
    std::vector<int> lengths;
    int64_t Tq, Tk;
    bool causal;
    int64_t window, radius, offset;
  };
  const std::vector<Case> cases = {
      {"causal", {150, 150}, 150, 150, true, 0, -1, 0},
      {"causal, padded items", {150, 97}, 150, 150, true, 0, -1, 0},
      {"sliding window, padded", {150, 120}, 150, 150, true, 40, -1, 0},
      {"two-sided window, padded", {150, 70}, 150, 150, false, 0, 9, 0},
      {"queries after cached keys", {180, 180}, 60, 180, true, 50, -1, 120},
  };
  for (const int64_t hd : kHeadDims) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.what) + ", head_dim " + std::to_string(hd));
      const int64_t B = 2, H = 3;
      MaskOptions mo;
      mo.keyLengths = c.lengths;
      mo.queries = c.Tq;
      mo.keys = c.Tk;
      mo.causal = c.causal;
      mo.slidingWindow = c.window;
      mo.windowRadius = c.radius;
      mo.queryOffset = c.offset;
      const Qkv kv = fusedViews(B, H, c.Tk, hd, 5);
      const torch::Tensor q = kv.q.narrow(2, c.Tk - c.Tq, c.Tq);
      const AttentionMask runs = buildMask(mo);
      ASSERT_NE(runs.ranges(), nullptr);
      const uint64_t made = AttentionMask::tensorsMade();
      const torch::Tensor lse = torch::empty({B, H, c.Tq});
      const std::optional<BlockedAttention> r =
          blockedAttention(q, kv.k, kv.v, 0.4, {}, runs, torch::empty({B, H, c.Tq, c.Tk}), {},
                           /*wantScores=*/true, 0.0, lse);
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(AttentionMask::tensorsMade(), made) << "the runs were made into a tensor";
      const torch::Tensor dense = runs.dense();  // checked against the loops in attention_mask_test
      const torch::Tensor lseDense = torch::empty({B, H, c.Tq});
      const std::optional<BlockedAttention> d =
          blockedAttention(q, kv.k, kv.v, 0.4, {}, AttentionMask(dense),
                           torch::empty({B, H, c.Tq, c.Tk}), {}, true, 0.0, lseDense);
      ASSERT_TRUE(d.has_value());
      EXPECT_TRUE(torch::equal(r->attention, d->attention));
      EXPECT_TRUE(torch::equal(r->scores, d->scores));
      EXPECT_TRUE(torch::equal(r->values, d->values));
      EXPECT_TRUE(torch::equal(lse, lseDense));
      expectExactZerosWhereMasked(r->attention, r->scores, dense);
      // Not a mask that hides nothing: the rows see different keys.
      EXPECT_GT(dense.isinf().sum().item<int64_t>(), 0);
      if (c.window == 0 && c.radius < 0 && c.offset == 0) {
        EXPECT_TRUE(torch::equal(dense, loopMask(B, c.Tq, c.Tk, c.causal, c.lengths)))
            << "the loops' causal and padding mask";
      }
    }
  }
}

// The kernel polls the run's cancel flag (read on the calling thread, CancelScope) between blocks
// of query rows and throws once its threads have stopped; unset, it computes.
TEST(BlockedAttention, StopsBetweenBlocksWhenTheRunIsCancelled) {
  const Qkv in = fusedViews(1, 2, 300, 16, 9);
  std::atomic<bool> flag{false};
  const CancelScope scope(&flag);
  EXPECT_TRUE(blockedAttention(in.q, in.k, in.v, 0.25, {}, {}, {}, {}, false).has_value());
  flag = true;
  try {
    blockedAttention(in.q, in.k, in.v, 0.25, {}, {}, {}, {}, false);
    ADD_FAILURE() << "a cancelled run's attention ran to its end";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Cancelled);
  }
}

// The textbook's per-head layer: one head's attention goes straight into its slice of a
// [B, H, Tq, Tk] buffer, which for B > 1 is not contiguous (its rows are). The other head's slice
// stays untouched.
TEST(BlockedAttention, WritesIntoOneHeadOfABatchedBuffer) {
  for (const int64_t hd : {int64_t{8}, int64_t{64}}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    const int64_t B = 2, H = 2, T = 520;
    const double scale = 0.25 * std::sqrt(8.0 / static_cast<double>(hd));
    const torch::Tensor q = randomTensor({B, 1, T, hd}, 31, 3.0),
                        k = randomTensor({B, 1, T, hd}, 32, 3.0),
                        v = randomTensor({B, 1, T, hd}, 33);
    const torch::Tensor mask = causalMask(T);  // [1, 1, T, T]
    const torch::Tensor attention = torch::full({B, H, T, T}, NAN),
                        scores = torch::full({B, H, T, T}, NAN);
    ASSERT_FALSE(attention.narrow(1, 1, 1).is_contiguous());
    const std::optional<BlockedAttention> r = blockedAttention(
        q, k, v, scale, {}, mask, attention.narrow(1, 1, 1), scores.narrow(1, 1, 1),
        /*wantScores=*/true);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->attention.data_ptr(), attention.narrow(1, 1, 1).data_ptr());
    EXPECT_TRUE(torch::isnan(attention.select(1, 0)).all().item<bool>()) << "head 0 untouched";
    EXPECT_TRUE(torch::isnan(scores.select(1, 0)).all().item<bool>()) << "head 0 untouched";
    const Reference want =
        referenceSdpa(q, k, v, scale, {}, loopMask(B, T, T, true, {int(T), int(T)}));
    expectAllNear(attention.narrow(1, 1, 1), want.attention, 1e-5, "attention");
    expectAllNear(r->values, want.values, valuesTolerance(hd), "values");
    expectExactZerosWhereMasked(attention.narrow(1, 1, 1), scores.narrow(1, 1, 1), mask);
  }
}

// What the kernel does not do exactly, it refuses before writing anything.
TEST(BlockedAttention, RefusesWhatItCannotComputeExactly) {
  const int64_t B = 1, H = 2, T = 8, hd = 4;
  const torch::Tensor q = randomTensor({B, H, T, hd}, 31), k = randomTensor({B, H, T, hd}, 32),
                      v = randomTensor({B, H, T, hd}, 33);
  const torch::Tensor out = torch::full({B, H, T, T}, 7.0f);
  const auto refused = [&](const torch::Tensor& qq, const torch::Tensor& kk,
                           const torch::Tensor& mask) {
    return !blockedAttention(qq, kk, v, 1.0, {}, mask, out, {}, false).has_value();
  };
  EXPECT_TRUE(refused(q.to(torch::kDouble), k, {})) << "not float32";
  EXPECT_TRUE(refused(q.clone().requires_grad_(true), k, {})) << "autograd";
  EXPECT_TRUE(refused(q, k.expand({B, H, T, hd}).narrow(1, 0, 1), {})) << "unequal heads";
  torch::Tensor blind = loopMask(B, T, T, true, {int(T)});
  blind.select(2, 3).fill_(kNegInf);  // query 3 sees no key: its softmax is NaN
  EXPECT_TRUE(refused(q, k, blind)) << "a row that sees nothing";
  EXPECT_TRUE(torch::all(out == 7.0f).item<bool>());
  EXPECT_FALSE(refused(q, k, loopMask(B, T, T, true, {int(T)})));
}

// Through scaledDotProduct: the kernels agree, the trace has the same steps either way, and with
// scoresUnused the blocked kernel leaves the scores out.
TEST(BlockedAttention, ScaledDotProductKernelsAgreeAndTraceTheSameSteps) {
  const int64_t B = 1, H = 3, T = 300, hd = 8;
  const Qkv in = fusedViews(B, H, T, hd, 41);
  SdpaOptions o;
  o.scale = 1.0 / std::sqrt(double(hd));
  o.scaleText = "1 / math.sqrt(hd)";
  o.mask = causalMask(T);
  o.bias = randomTensor({1, H, 1, T}, 44);  // ALiBi's shape: one row per head
  o.biasText = "alibi";
  LayerTrace refTrace, blockedTrace;
  TraceRecorder refRec(&refTrace), blockedRec(&blockedTrace);
  o.kernel = SdpaKernel::Reference;
  const ScaledDotProduct ref = scaledDotProduct(in.q, in.k, in.v, o, refRec, -1, -1, -1);
  o.kernel = SdpaKernel::Blocked;
  const ScaledDotProduct blocked = scaledDotProduct(in.q, in.k, in.v, o, blockedRec, -1, -1, -1);
  // Each kernel against the same formula in double precision, not against each other: float32
  // kernels that sum in different orders (OpenBLAS's AVX2 and AVX-512 sets among them) each land
  // within ~1.4e-6 of it here (some weights near 1, scores up to ~10), so two of them can differ
  // by twice that. A wrong mask, scale or bias is off by 1e-3 or more.
  SdpaOptions exact = o;
  exact.kernel = SdpaKernel::Reference;
  exact.mask = o.mask.dense().to(torch::kDouble);
  exact.bias = o.bias.to(torch::kDouble);
  TraceRecorder noTrace(nullptr);
  const ScaledDotProduct truth =
      scaledDotProduct(in.q.to(torch::kDouble), in.k.to(torch::kDouble), in.v.to(torch::kDouble),
                       exact, noTrace, -1, -1, -1);
  const auto error = [&](const torch::Tensor& t, const torch::Tensor& want) {
    return (t.to(torch::kDouble) - want).abs().max().item<double>();
  };
  EXPECT_LT(error(ref.attention, truth.attention), 2e-6);
  EXPECT_LT(error(blocked.attention, truth.attention), 2e-6);
  EXPECT_LT(error(ref.values, truth.values), 5e-6);
  EXPECT_LT(error(blocked.values, truth.values), 5e-6);
  EXPECT_TRUE(torch::equal(torch::isinf(ref.scores), torch::isinf(blocked.scores)));
  EXPECT_EQ(stepNames(refTrace), stepNames(blockedTrace));
  for (std::size_t i = 0; i < refTrace.steps.size(); ++i) {
    EXPECT_EQ(refTrace.steps[i].shape, blockedTrace.steps[i].shape) << i;
    EXPECT_EQ(refTrace.steps[i].inputs, blockedTrace.steps[i].inputs) << i;
  }

  o.kernel = SdpaKernel::Auto;
  o.buffers.scoresUnused = true;
  TraceRecorder none(nullptr);
  const ScaledDotProduct autoPicked = scaledDotProduct(in.q, in.k, in.v, o, none, -1, -1, -1);
  EXPECT_FALSE(autoPicked.scores.defined()) << "300 x 300 scores: the blocked kernel";
  EXPECT_LT(error(autoPicked.attention, truth.attention), 2e-6);

  // Small inputs: the blocked kernel where its AVX-512 loops take the layout (16-wide value
  // columns), else the step-by-step one (it always returns the scores).
  for (const int64_t width : {int64_t{16}, int64_t{8}}) {
    const Qkv small = fusedViews(1, 2, 12, width, 45);
    SdpaOptions s;
    s.scale = 0.25;
    s.buffers.scoresUnused = true;
    const ScaledDotProduct picked =
        scaledDotProduct(small.q, small.k, small.v, s, none, -1, -1, -1);
    const bool blockedPicked = !picked.scores.defined();
    EXPECT_EQ(blockedPicked, width == 16 && attention_kernels::available()) << width;
    s.kernel = SdpaKernel::Reference;
    const ScaledDotProduct stepwise =
        scaledDotProduct(small.q, small.k, small.v, s, none, -1, -1, -1);
    EXPECT_LT((stepwise.attention - picked.attention).abs().max().item<float>(), 1e-6) << width;
    EXPECT_LT((stepwise.values - picked.values).abs().max().item<float>(), 1e-5) << width;
  }
}

}  // namespace
}  // namespace attnscope
