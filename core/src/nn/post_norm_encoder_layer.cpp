// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/post_norm_encoder_layer.h"

#include <cmath>

#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {

PostNormEncoderParts addPostNormLayer(torch::nn::Module& root, const std::string& prefix,
                                      const PostNormNames& n, int64_t C, int64_t I, double eps) {
  const auto call = [](auto module) {
    return [module](const torch::Tensor& x) mutable { return module->forward(x); };
  };
  const auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    return call(addModule(root, prefix + name, Linear(in, out)));
  };
  const auto norm = [&](const std::string& name) {
    return call(addModule(root, prefix + name, LayerNorm(C, eps)));
  };
  PostNormEncoderParts p;
  p.query = linear(n.query, C, C);
  p.key = linear(n.key, C, C);
  p.value = linear(n.value, C, C);
  Linear output = addModule(root, prefix + n.attentionOutput, Linear(C, C));
  p.attentionOutput = call(output);
  p.attentionOutputWeight = [output] { return output->weight; };
  p.up = linear(n.up, C, I);
  p.down = linear(n.down, I, C);
  p.attentionNorm = norm(n.attentionNorm);
  p.outputNorm = norm(n.outputNorm);
  p.names = {n.query,         n.key, n.value, n.attentionOutput,
             n.attentionNorm, n.up,  n.down,  n.outputNorm};
  return p;
}

torch::Tensor postNormEncoderLayer(const torch::Tensor& x, const PostNormEncoderParts& p,
                                   int64_t heads, Activation act, const AttentionMask& mask,
                                   const AttentionBuffers& buffers, TraceRecorder& rec,
                                   const torch::Tensor& valueNorms) {
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
  AttentionTail tail;
  tail.output = {p.attentionOutput, name(3) + "(merged)",
                 [&] { return outputWeightByHead(p.attentionOutputWeight(), heads); }};
  tail.mergeExpression = "values.transpose(1, 2).reshape(B, T, C)";
  tail.valueNorms = valueNorms;
  int s = -1;
  torch::Tensor h = attentionTail({std::move(q), std::move(k), std::move(v), qStep, kStep, vStep},
                                  sdpa, tail, rec, &s);
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
