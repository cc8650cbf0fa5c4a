// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/scaled_dot_product.h"

#include <cstdlib>
#include <sstream>

#include "attnscope/error.h"
#include "generation/layer_kv_cache.h"
#include "nn/attention_kernels.h"
#include "nn/blocked_attention.h"

namespace attnscope {
namespace {

/// Without the AVX-512 kernels (blocks of ATen products), below these many scores per matrix the
/// step-by-step path's few whole-tensor calls cost less than the blocked path's calls per block.
/// Measured, one thread, reference / blocked ms: tiny GPT (T = 128, causal) 1.92 / 1.97, GPT-2
/// T = 128 261 / 257; unmasked toy layer H = 12 at T = 512 25.8 / 28.6, T = 1024 121 / 93;
/// bert-base at T = 512 832 / 778. With a mask the blocked kernel also skips what it hides, so it
/// pays off earlier.
constexpr int64_t kBlockedMinScoresMasked = 256 * 256;
constexpr int64_t kBlockedMinScores = 512 * 512;

/// ATTNSCOPE_ATTENTION_KERNEL=reference|blocked overrides Auto for a whole process: the reference
/// tests run every family's checkpoints through the blocked kernel this way, and a benchmark can
/// compare the two in one build.
SdpaKernel processKernel() {
  static const SdpaKernel kernel = [] {
    const char* env = std::getenv("ATTNSCOPE_ATTENTION_KERNEL");
    const std::string v = env ? env : "";
    return v == "reference" ? SdpaKernel::Reference
           : v == "blocked" ? SdpaKernel::Blocked
                            : SdpaKernel::Auto;
  }();
  return kernel;
}

/// The layouts blockedAttention runs through its AVX-512 kernels (the rest take ATen's products).
bool kernelsTake(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  if (!attention_kernels::available()) return false;
  for (const torch::Tensor* t : {&q, &k, &v})
    if (!t->device().is_cpu() || t->scalar_type() != torch::kFloat || t->stride(-1) != 1)
      return false;
  return v.size(-1) % 16 == 0;
}

bool tryBlocked(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                const SdpaOptions& o) {
  switch (o.kernel == SdpaKernel::Auto ? processKernel() : o.kernel) {
    case SdpaKernel::Reference:
      return false;
    case SdpaKernel::Blocked:
      return true;
    case SdpaKernel::Auto:
      break;
  }
  if (q.dim() < 2 || k.dim() < 2) return false;
  // With the AVX-512 kernels the blocked path is the faster one at every size: it makes no
  // dispatcher or BLAS call per head (OpenBLAS ran a 128 × 128 × 64 product at ~28 GFLOP/s, with
  // the kernels ~100). Measured, one thread, reference / blocked ms: toy layer H = 12 at
  // T = 16 2.18 / 1.53, T = 128 10.9 / 9.1; tutorial set-up 8.35 / 7.41; tiny GPT 2.09 / 1.87;
  // t5-small 97 / 96.
  if (kernelsTake(q, k, v)) return true;
  return q.size(-2) * k.size(-2) >=
         (o.mask.defined() ? kBlockedMinScoresMasked : kBlockedMinScores);
}

/// The mask step's expression.
std::string maskText(const SdpaOptions& o) {
  return o.maskText.empty() ? std::string("scaled + mask") : o.maskText;
}

/// The capping step's expression: "50 * tanh(scores / 50)".
std::string softcapText(double cap) {
  std::ostringstream c;
  c << cap;
  return c.str() + " * tanh(scores / " + c.str() + ")";
}

/// The head mask, then the values' trace step: the end of both paths.
ScaledDotProduct finishValues(ScaledDotProduct r, const SdpaOptions& o, TraceRecorder& rec,
                              int attentionStep, int vStep) {
  const int head = o.head;
  const bool perHead = head >= 0;
  if (const torch::Tensor& keep = o.buffers.headMask; keep.defined()) {
    // Not in place: with a mask that requires grad, autograd needs the unmasked values.
    r.values = perHead ? r.values * keep[head] : r.values * keep.view({-1, 1, 1});
  }
  r.valuesStep = rec.record(perHead ? "out" : "values", perHead ? "wei @ v" : "attention @ v",
                            "matmul", r.values, {attentionStep, vStep}, head);
  const torch::Tensor& given = o.buffers.attention;
  if (o.buffers.written && given.defined() && r.attention.data_ptr() == given.data_ptr())
    o.buffers.written();
  return r;
}

}  // namespace

ScaledDotProduct scaledDotProduct(const torch::Tensor& q, const torch::Tensor& newK,
                                  const torch::Tensor& newV, const SdpaOptions& o,
                                  TraceRecorder& rec, int qStep, int kStep, int vStep) {
  // Generation: the keys and values of every position so far, the cached ones first; the mask
  // (and any bias) the caller built is then [..., Tq new, Tk all].
  const auto [k, v] =
      o.buffers.kvCache ? o.buffers.kvCache->append(newK, newV, o.head) : std::pair{newK, newV};
  ScaledDotProduct r;
  // Handles, not copies: the caller copies them into the result once the layer is done.
  KeptQueryKey* const kept = o.buffers.queryKey;
  if (kept) *kept = {q.detach(), k.detach(), o.scale, o.softcap, {}, {}, {}};
  const bool onDemand = o.buffers.onDemand;
  if (onDemand) {
    if (!kept) throw Error(ErrorKind::Internal, "attention on demand without a place to keep q, k");
    kept->bias = o.bias.defined() ? o.bias.detach() : o.bias;
    kept->mask = o.mask;
    std::vector<int64_t> rows(q.sizes().begin(), q.sizes().end() - 1);
    kept->rowLogSumExp = torch::empty(rows, q.options().requires_grad(false));
  }
  const int head = o.head;
  const bool perHead = head >= 0;
  torch::Tensor scoresOut = o.buffers.scores,
                attentionOut = o.buffers.attention;  // handles, not data
  std::optional<BlockedAttention> blocked;
  // On demand the blocked kernel is the one that never holds a [..., Tq, Tk] buffer.
  if (onDemand || tryBlocked(q, k, v, o))
    blocked = blockedAttention(q, k, v, o.scale, o.bias, o.mask, attentionOut, scoresOut,
                               !o.buffers.scoresUnused, o.softcap,
                               onDemand ? kept->rowLogSumExp : torch::Tensor());
  if (blocked) {
    // The same steps as below, by shape: every scores-shaped step has the attention's shape
    // (on demand nothing holds it: a shape without data stands in).
    std::vector<int64_t> full(q.sizes().begin(), q.sizes().end() - 1);
    full.push_back(k.size(-2));
    const torch::Tensor shaped = blocked->attention.defined()
                                     ? blocked->attention
                                     : torch::empty(full, torch::TensorOptions(torch::kMeta));
    int s = rec.record(perHead ? "wei" : "scores", "q @ k.transpose(-2, -1)", "matmul", shaped,
                       {qStep, kStep}, head);
    if (o.scale != 1.0 || !o.scaleText.empty())
      s = rec.record("scaled", (perHead ? "wei * " : "scores * ") + o.scaleText, "scale", shaped,
                     {s}, head);
    if (o.softcap > 0)
      s = rec.record("capped", softcapText(o.softcap), "softcap", shaped, {s}, head);
    if (o.bias.defined())
      s = rec.record("biased",
                     "scores + " + (o.biasText.empty() ? std::string("position_bias") : o.biasText),
                     "position_bias", shaped, {s}, head);
    if (o.mask.defined())
      s = rec.record("masked", perHead ? "wei.masked_fill(tril == 0, float('-inf'))" : maskText(o),
                     "mask", shaped, {s}, head);
    r.scores = blocked->scores;
    r.attention = blocked->attention;
    s = rec.record("attention", "F.softmax(scaled, dim=-1)", "softmax", r.attention, {s}, head);
    r.values = blocked->values;
    return finishValues(r, o, rec, s, vStep);
  }
  torch::Tensor raw = scoresOut.defined() ? torch::matmul_out(scoresOut, q, k.transpose(-2, -1))
                                          : torch::matmul(q, k.transpose(-2, -1));
  int s = rec.record(perHead ? "wei" : "scores", "q @ k.transpose(-2, -1)", "matmul", raw,
                     {qStep, kStep}, head);
  // In place: raw is ours, and a T x T temporary per step would triple the peak at long inputs.
  torch::Tensor scaled = raw;
  if (o.scale != 1.0 || !o.scaleText.empty()) {
    scaled.mul_(o.scale);
    s = rec.record("scaled", (perHead ? "wei * " : "scores * ") + o.scaleText, "scale", scaled, {s},
                   head);
  }
  if (o.softcap > 0) {
    // As transformers writes it (divide, tanh, multiply), so the float32 rounding matches.
    scaled.div_(o.softcap).tanh_().mul_(o.softcap);
    s = rec.record("capped", softcapText(o.softcap), "softcap", scaled, {s}, head);
  }
  if (o.bias.defined()) {
    scaled.add_(o.bias);
    s = rec.record("biased",
                   "scores + " + (o.biasText.empty() ? std::string("position_bias") : o.biasText),
                   "position_bias", scaled, {s}, head);
  }
  if (o.mask.defined()) {
    scaled.add_(o.mask.dense());
    s = rec.record("masked", perHead ? "wei.masked_fill(tril == 0, float('-inf'))" : maskText(o),
                   "mask", scaled, {s}, head);
  }
  r.scores = scaled;
  if (onDemand) kept->rowLogSumExp = torch::logsumexp(scaled, -1).detach();
  r.attention = attentionOut.defined() ? torch::softmax_out(attentionOut, scaled, -1)
                                       : torch::softmax(scaled, -1);
  s = rec.record("attention", "F.softmax(scaled, dim=-1)", "softmax", r.attention, {s}, head);
  r.values = torch::matmul(r.attention, v);
  return finishValues(r, o, rec, s, vStep);
}

}  // namespace attnscope
