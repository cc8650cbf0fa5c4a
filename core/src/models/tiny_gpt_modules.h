// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "attnscope/tiny_gpt.h"
#include "nn/per_head_attention.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// The chapter's FeedForward: Linear(C, 4C), ReLU, Linear(4C, C). Parameters: net.0.*, net.2.*.
class TinyGptFeedForwardImpl : public torch::nn::Module {
 public:
  explicit TinyGptFeedForwardImpl(int nEmbd);
  torch::nn::Sequential net{nullptr};
};
TORCH_MODULE(TinyGptFeedForward);

/// The chapter's Block: x = x + sa(ln1(x)); x = x + ffwd(ln2(x)).
/// Parameters: sa.* (per-head attention), ffwd.net.{0,2}.{weight,bias}, ln1.*, ln2.*.
class TinyGptBlockImpl : public torch::nn::Module {
 public:
  TinyGptBlockImpl(int nEmbd, int nHead);
  /// x: [B, T, C]; mask: [B, 1, T, T] additive -> [B, T, C]. With buffers ([B, H, T, T] each) the
  /// attention is written there; rec records the whole block when active.
  torch::Tensor forward(const torch::Tensor& x, const AttentionMask& mask, TraceRecorder& rec,
                        const AttentionBuffers* buffers = nullptr);

  PerHeadAttention sa{nullptr};
  TinyGptFeedForward ffwd{nullptr};
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};

 private:
  double m_scale;
};
TORCH_MODULE(TinyGptBlock);

/// The chapter's GPTLanguageModel, registered under its Python names so a PyTorch state dict of
/// the same architecture loads as is.
class TinyGptModuleImpl : public torch::nn::Module {
 public:
  explicit TinyGptModuleImpl(const TinyGptConfig& config);
  /// idx: [B, T] int64 -> token + position embeddings [B, T, C].
  torch::Tensor embed(const torch::Tensor& idx);
  /// idx: [B, T] int64 token ids; mask: [B, 1, T, T] additive. Returns logits [B, T, V] (training).
  torch::Tensor forward(const torch::Tensor& idx, const torch::Tensor& mask);

  torch::nn::Embedding token_embedding_table{nullptr}, position_embedding_table{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(TinyGptModule);

}  // namespace attnscope
