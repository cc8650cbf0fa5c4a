// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_block.h"

namespace attnscope {

Gpt2BlockImpl::Gpt2BlockImpl(int nEmbd, int nHead, double layerNormEpsilon) {
  const auto lnOptions = torch::nn::LayerNormOptions({nEmbd}).eps(layerNormEpsilon);
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(lnOptions));
  attn = register_module("attn", Gpt2Attention(nEmbd, nHead));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(lnOptions));
  mlp = register_module("mlp", Gpt2Mlp(nEmbd));
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                     const AttentionBuffers& buffers, LayerTrace* trace) {
  TraceRecorder rec(trace);
  const int xStep = rec.record("x", "x", "input", x);
  torch::Tensor h = ln_1->forward(x);
  int s = rec.record("ln_1", "self.ln_1(x)", "layernorm", h, {xStep});
  h = attn->forward(h, mask, buffers, rec, s, &s);
  // The residual stream is updated in place: x belongs to the caller's loop and is not reused.
  torch::Tensor residual = h.add_(x);
  const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
  h = ln_2->forward(residual);
  s = rec.record("ln_2", "self.ln_2(x)", "layernorm", h, {residualStep});
  h = mlp->forward(h, rec, s, &s);
  h.add_(residual);
  rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
  return h;
}

}  // namespace attnscope
