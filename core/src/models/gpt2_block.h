// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "models/gpt2_attention.h"
#include "models/gpt2_mlp.h"

namespace attnscope {

/// One pre-LayerNorm GPT-2 block: x + attn(ln_1(x)), then + mlp(ln_2(·)).
/// Parameters: ln_1, attn.*, ln_2, mlp.* under their Hugging Face names.
class Gpt2BlockImpl : public torch::nn::Module {
 public:
  Gpt2BlockImpl(int nEmbd, int nHead, double layerNormEpsilon);

  /// x: [B, T, C] -> [B, T, C]; the attention goes into `buffers` ([B, H, T, T] each) and every
  /// step into `trace` (when not null).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask,
                        const AttentionBuffers& buffers, LayerTrace* trace);

  torch::nn::LayerNorm ln_1{nullptr};
  Gpt2Attention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  Gpt2Mlp mlp{nullptr};
};
TORCH_MODULE(Gpt2Block);

}  // namespace attnscope
