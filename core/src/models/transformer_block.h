// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "nn/attention_output.h"
#include "nn/feed_forward.h"
#include "nn/per_head_attention.h"

namespace attnscope {

/// x = x + sa(ln1(x)); x = x + ffwd(ln2(x)). Parameters: sa.*, ffwd.net.*, ln1.*, ln2.*.
class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(int nEmbd, int nHead);
  /// x: [B, T, C]; mask: [B, 1, T, T] additive. Fills attention/scores [B, H, T, T] when asked.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask, LayerTrace* trace,
                        AttentionOutput* attention);

  PerHeadAttention sa{nullptr};
  FeedForward ffwd{nullptr};
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};

 private:
  double m_scale;
};
TORCH_MODULE(TransformerBlock);

}  // namespace attnscope
