// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/tiny_gpt.h"
#include "models/transformer_block.h"

namespace attnscope {

/// The chapter's GPTLanguageModel, registered under its Python names so a PyTorch state dict of
/// the same architecture loads as is.
class TinyGptModuleImpl : public torch::nn::Module {
 public:
  explicit TinyGptModuleImpl(const TinyGptConfig& config);
  /// idx: [B, T] int64 token ids; mask: [B, 1, T, T] additive causal(+padding) mask.
  /// Returns logits [B, T, V]. When traces/attentions are given, fills one entry per block, and
  /// hidden (if given) receives ln_f's output [B, T, C].
  torch::Tensor forward(const torch::Tensor& idx, const torch::Tensor& mask,
                        std::vector<LayerTrace>* traces = nullptr,
                        std::vector<AttentionOutput>* attentions = nullptr,
                        torch::Tensor* hidden = nullptr);

  torch::nn::Embedding token_embedding_table{nullptr}, position_embedding_table{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(TinyGptModule);

}  // namespace attnscope
