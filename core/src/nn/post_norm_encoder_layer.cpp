// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/post_norm_encoder_layer.h"

#include <cmath>

#include "nn/mlp.h"
#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {

torch::Tensor postNormEncoderLayer(const torch::Tensor& x, const PostNormEncoderParts& p,
                                   int64_t heads, Activation act, const torch::Tensor& mask,
                                   const AttentionBuffers& buffers, TraceRecorder& rec) {
  const auto name = [&](std::size_t i) { return "self." + p.names[i]; };
  const int xStep = rec.record("x", "x", "input", x);
  torch::Tensor q = p.query(x), k = p.key(x), v = p.value(x);
  const int qLin = rec.record("q_proj", name(0) + "(x)", "linear", q, {xStep});
  const int kLin = rec.record("k_proj", name(1) + "(x)", "linear", k, {xStep});
  const int vLin = rec.record("v_proj", name(2) + "(x)", "linear", v, {xStep});
  q = splitHeads(q, heads);
  k = splitHeads(k, heads);
  v = splitHeads(v, heads);
  const int qStep = rec.record("q", "q.view(B, T, H, hd).transpose(1, 2)", "permute", q, {qLin});
  const int kStep = rec.record("k", "k.view(B, T, H, hd).transpose(1, 2)", "permute", k, {kLin});
  const int vStep = rec.record("v", "v.view(B, T, H, hd).transpose(1, 2)", "permute", v, {vLin});
  SdpaOptions sdpa;
  sdpa.mask = mask;
  sdpa.scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  sdpa.scaleText = "1 / math.sqrt(hd)";
  sdpa.buffers = buffers;
  const ScaledDotProduct out = scaledDotProduct(q, k, v, sdpa, rec, qStep, kStep, vStep);
  const torch::Tensor merged = mergeHeads(out.values);
  int s = rec.record("merged", "values.transpose(1, 2).reshape(B, T, C)", "merge_heads", merged,
                     {out.valuesStep});
  torch::Tensor h = p.attentionOutput(merged);
  s = rec.record("attn_out", name(3) + "(merged)", "linear", h, {s});
  h = h.add_(x);
  const int r1 = rec.record("residual_1", "attn_out + x", "add", h, {s, xStep});
  h = p.attentionNorm(h);
  const int n1 = rec.record("norm_1", name(4) + "(x)", "layernorm", h, {r1});
  const MlpProjection up{p.up, name(5) + "(x)"}, down{p.down, name(6) + "(h)"};
  int mlpStep = -1;
  torch::Tensor f = feedForward(h, up, act, down, nullptr, rec, n1, &mlpStep);
  f = f.add_(h);
  const int r2 = rec.record("residual_2", "mlp_out + x", "add", f, {mlpStep, n1});
  f = p.outputNorm(f);
  rec.record("norm_2", name(7) + "(x)", "layernorm", f, {r2});
  return f;
}

}  // namespace attnscope
