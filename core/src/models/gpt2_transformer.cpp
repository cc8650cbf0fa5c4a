// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_transformer.h"

namespace attnscope {
namespace {

// Passing the weight keeps Embedding from drawing N(0, 1) from torch's global generator.
torch::nn::Embedding uninitialisedEmbedding(int64_t rows, int64_t dim) {
  return torch::nn::Embedding(
      torch::nn::EmbeddingOptions(rows, dim)._weight(torch::empty({rows, dim})));
}

}  // namespace

Gpt2TransformerImpl::Gpt2TransformerImpl(const Gpt2Config& config) {
  wte = register_module("wte", uninitialisedEmbedding(config.vocabSize, config.nEmbd));
  wpe = register_module("wpe", uninitialisedEmbedding(config.nPositions, config.nEmbd));
  h = register_module("h", torch::nn::ModuleList());
  for (int i = 0; i < config.nLayer; ++i) {
    blocks.push_back(Gpt2Block(config.nEmbd, config.nHead, config.layerNormEpsilon));
    h->push_back(blocks.back());
  }
  ln_f = register_module(
      "ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.nEmbd}).eps(config.layerNormEpsilon)));
  for (auto& p : parameters()) p.set_requires_grad(false);
}

torch::Tensor Gpt2TransformerImpl::embed(const torch::Tensor& ids) const {
  const torch::Tensor positions = torch::arange(ids.size(1), torch::kLong);
  return torch::embedding(wte->weight, ids) + torch::embedding(wpe->weight, positions).unsqueeze(0);
}

torch::Tensor Gpt2TransformerImpl::logits(const torch::Tensor& hidden) const {
  return torch::matmul(hidden, wte->weight.t());
}

}  // namespace attnscope
