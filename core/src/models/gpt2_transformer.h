// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "models/gpt2_block.h"
#include "models/gpt2_config.h"

namespace attnscope {

/// GPT-2's transformer stack (Hugging Face's GPT2Model): token and position embeddings, n_layer
/// blocks, final LayerNorm. The language-model head is tied to wte, so it has no parameters of
/// its own. Parameters are left uninitialised: they are always loaded from a checkpoint.
/// Parameters: wte.weight [V, C], wpe.weight [P, C], h.{i}.*, ln_f.{weight,bias} [C].
class Gpt2TransformerImpl : public torch::nn::Module {
 public:
  explicit Gpt2TransformerImpl(const Gpt2Config& config);

  /// ids: [B, T] int64 -> wte[ids] + wpe[0..T): [B, T, C]
  torch::Tensor embed(const torch::Tensor& ids) const;
  /// hidden: [N, C] after ln_f -> logits [N, V] through the tied wte.
  torch::Tensor logits(const torch::Tensor& hidden) const;

  torch::nn::Embedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  std::vector<Gpt2Block> blocks;  // the entries of h, typed
};
TORCH_MODULE(Gpt2Transformer);

}  // namespace attnscope
