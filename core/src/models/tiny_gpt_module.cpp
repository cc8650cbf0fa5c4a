// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/tiny_gpt_module.h"

namespace attnscope {

TinyGptModuleImpl::TinyGptModuleImpl(const TinyGptConfig& c) {
  token_embedding_table = register_module("token_embedding_table", torch::nn::Embedding(c.vocabSize, c.nEmbd));
  position_embedding_table = register_module("position_embedding_table", torch::nn::Embedding(c.blockSize, c.nEmbd));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int i = 0; i < c.nLayer; ++i) blocks->push_back(TransformerBlock(c.nEmbd, c.nHead));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.nEmbd})));
  lm_head = register_module("lm_head", torch::nn::Linear(c.nEmbd, c.vocabSize));
}

torch::Tensor TinyGptModuleImpl::forward(const torch::Tensor& idx, const torch::Tensor& mask,
                                         std::vector<LayerTrace>* traces,
                                         std::vector<AttentionOutput>* attentions,
                                         torch::Tensor* hidden) {
  const int64_t T = idx.size(1);
  torch::Tensor pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
  torch::Tensor x = token_embedding_table(idx) + position_embedding_table(pos);
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    LayerTrace* trace = nullptr;
    if (traces) {
      traces->push_back({"per-head", {}});
      trace = &traces->back();
    }
    AttentionOutput* att = nullptr;
    if (attentions) {
      attentions->emplace_back();
      att = &attentions->back();
    }
    x = blocks[i]->as<TransformerBlockImpl>()->forward(x, mask, trace, att);
  }
  x = ln_f(x);
  if (hidden) *hidden = x;
  return lm_head(x);
}

}  // namespace attnscope
