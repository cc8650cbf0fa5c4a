// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/transformer_block.h"

#include <cmath>

namespace attnscope {

TransformerBlockImpl::TransformerBlockImpl(int nEmbd, int nHead)
    : m_scale(1.0 / std::sqrt(static_cast<double>(nEmbd / nHead))) {
  sa = register_module("sa", PerHeadAttention(nEmbd, nEmbd, nHead));
  ffwd = register_module("ffwd", FeedForward(nEmbd));
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({nEmbd})));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({nEmbd})));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask,
                                            LayerTrace* trace, AttentionOutput* attention) {
  AttentionInput in;
  in.x = ln1(x);
  in.mask = mask;
  in.scale = m_scale;
  in.scaleText = "hd**-0.5";
  in.keepAttention = attention != nullptr;
  AttentionOutput a = sa->forward(in, trace);
  torch::Tensor h = x + a.out;
  if (attention) *attention = a;
  return h + ffwd(ln2(h));
}

}  // namespace attnscope
