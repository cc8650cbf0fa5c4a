// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "nn/conv1d.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {

/// GPT-2's causal self-attention: c_attn projects to q|k|v as three contiguous blocks of n_embd
/// (unlike the tutorial's per-head interleaving), heads of n_embd / n_head, scale 1/√hd, c_proj.
/// Parameters: c_attn.{weight [C, 3C], bias [3C]}, c_proj.{weight [C, C], bias [C]}.
class Gpt2AttentionImpl : public torch::nn::Module {
 public:
  Gpt2AttentionImpl(int nEmbd, int nHead);

  /// x: [B, T, C]; mask: [B, 1, T, T] additive (causal + key padding). The attention (and the
  /// scores, when wanted) are written into `buffers`, each [B, H, T, T]. Returns [B, T, C];
  /// *outStep receives the trace index of the result.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask,
                        const AttentionBuffers& buffers, TraceRecorder& rec, int inStep,
                        int* outStep);

  Gpt2Conv1D c_attn{nullptr};
  Gpt2Conv1D c_proj{nullptr};

 private:
  int m_nEmbd, m_nHead;
};
TORCH_MODULE(Gpt2Attention);

}  // namespace attnscope
