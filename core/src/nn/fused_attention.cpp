// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/fused_attention.h"

#include "nn/scaled_dot_product.h"

namespace attnscope {

FusedAttentionImpl::FusedAttentionImpl(int inputDim, int dModel, int heads)
    : m_dModel(dModel), m_heads(heads) {
  qkv_layer = register_module("qkv_layer", torch::nn::Linear(inputDim, 3 * dModel));
  linear_layer = register_module("linear_layer", torch::nn::Linear(dModel, dModel));
}

AttentionOutput FusedAttentionImpl::forward(const AttentionInput& in, TraceRecorder& rec) {
  const int64_t B = in.x.size(0), T = in.x.size(1), hd = m_dModel / m_heads;

  // (B, T, in) -> q, k, v chunks of (B, H, T, hd), recorded under the tutorial's names.
  const auto project = [&](const torch::Tensor& src, const std::string& srcName, int srcStep,
                           const std::string& prefix) {
    const int64_t len = src.size(1);
    torch::Tensor qkv = qkv_layer(src);
    int s = rec.record(prefix + "qkv", "qkv_layer(" + srcName + ")", "linear", qkv, {srcStep});
    qkv = qkv.reshape({B, len, m_heads, 3 * hd});
    s = rec.record(prefix + "qkv", prefix + "qkv.reshape(B, T, H, 3*hd)", "reshape", qkv, {s});
    qkv = qkv.permute({0, 2, 1, 3});
    s = rec.record(prefix + "qkv", prefix + "qkv.permute(0, 2, 1, 3)", "permute", qkv, {s});
    return std::make_pair(qkv.chunk(3, -1), s);
  };

  const int xStep = in.inputStep >= 0 ? in.inputStep : rec.record("x", "x", "input", in.x);
  auto [chunks, qkvStep] = project(in.x, "x", xStep, "");
  torch::Tensor q = chunks[0], k = chunks[1], v = chunks[2];
  const int qStep = rec.record("q", "q, k, v = qkv.chunk(3, dim=-1)", "chunk", q, {qkvStep});
  int kStep = -1, vStep = -1;
  if (in.context.defined()) {
    const int cStep = rec.record("context", "context", "input", in.context);
    auto [cchunks, cqkvStep] = project(in.context, "context", cStep, "context_");
    k = cchunks[1];
    v = cchunks[2];
    kStep = rec.record("k", "_, k, v = context_qkv.chunk(3, dim=-1)", "chunk", k, {cqkvStep});
    vStep = rec.record("v", "_, k, v = context_qkv.chunk(3, dim=-1)", "chunk", v, {cqkvStep});
  } else {
    kStep = rec.record("k", "q, k, v = qkv.chunk(3, dim=-1)", "chunk", k, {qkvStep});
    vStep = rec.record("v", "q, k, v = qkv.chunk(3, dim=-1)", "chunk", v, {qkvStep});
  }

  SdpaOptions sdpa;
  sdpa.mask = in.mask;
  sdpa.scale = in.scale;
  sdpa.scaleText = in.scaleText;
  sdpa.buffers = in.buffers;
  ScaledDotProduct sdp = scaledDotProduct(q, k, v, sdpa, rec, qStep, kStep, vStep);
  // Heads back next to each other on the channel axis: (B, H, T, hd) -> (B, T, H·hd).
  torch::Tensor values = sdp.values.permute({0, 2, 1, 3}).reshape({B, T, m_dModel});
  int s = rec.record("values", "values.permute(0, 2, 1, 3).reshape(B, T, d_model)", "merge_heads",
                     values, {sdp.valuesStep});
  torch::Tensor out = linear_layer(values);
  rec.record("out", "linear_layer(values)", "linear", out, {s});
  return {out, sdp.attention, sdp.scores};
}

}  // namespace attnscope
