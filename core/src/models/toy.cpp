// SPDX-License-Identifier: GPL-3.0-or-later
// The textbook's and the tutorial's single attention layer with seeded weights: the toy family.
#include <cmath>

#include "attnscope/char_tokenizer.h"
#include "attnscope/model.h"
#include "attnscope/toy_config.h"
#include "attnscope/word_tokenizer.h"
#include "models/transformer_model.h"
#include "nn/fused_attention.h"
#include "nn/per_head_attention.h"
#include "nn/state_dict.h"
#include "nn/toy_embedding.h"
#include "runtime/runtime_init.h"

namespace attnscope {
namespace {

/// One layer, fused (qkv_layer, linear_layer) or per-head (heads.{h}.{key,query,value}, proj), fed
/// seeded per-token embeddings or N(0, 1) input, with or without a context for cross-attention.
class ToyFamily final : public TransformerFamily {
 public:
  explicit ToyFamily(const ToyConfig& config) : m_config(config) {
    config.validate();
    ensureRuntime();
    if (config.variant == Variant::Fused) {
      m_fused = FusedAttention(config.inputDim, config.dModel, config.heads);
      m_module = m_fused.ptr();
    } else {
      m_perHead = PerHeadAttention(config.inputDim, config.dModel, config.heads);
      m_module = m_perHead.ptr();
    }
    initialiseLikePyTorch(*m_module, seededGenerator(config.seed));
    m_module->eval();
    if (config.tokenizer == TokenizerKind::Char) {
      m_tokenizer = std::make_unique<CharTokenizer>();
    } else {
      m_tokenizer = std::make_unique<WordTokenizer>();
    }
  }

  ModelInfo info() const override {
    ModelInfo i;
    i.kind = "toy";
    i.name = std::string("toy ") + toString(m_config.variant) + " layer";
    i.variant = toString(m_config.variant);
    i.layers = 1;
    i.heads = m_config.heads;
    i.kvHeads = m_config.heads;
    i.dModel = m_config.dModel;
    i.causal = m_config.mask == MaskKind::Causal;
    i.supportsContext = true;
    i.supportsRandomInput = true;
    i.parameterBytes = parameterBytes(*m_module);
    return i;
  }

  std::vector<Token> tokenize(const std::string& text) const override {
    return m_tokenizer->encode(text);
  }
  torch::nn::Module& module() override { return *m_module; }
  void checkRequest(const RunRequest&) const override {}

  uint64_t activationBytesPerToken() const override {
    return (static_cast<uint64_t>(m_config.inputDim) + 4ull * m_config.dModel) * 4 * 2;
  }

  Embedded embed(const BatchInput& batch, const RunRequest& request,
                 const torch::Device& device) override {
    Embedded e;
    if (request.random) {
      e.x = torch::randn(
          {static_cast<int64_t>(batch.tokens.size()), batch.maxQuery, m_config.inputDim},
          seededGenerator(m_config.seed + 1));
    } else {
      e.x = embedTokens(batch.tokens, batch.maxQuery, m_config.inputDim, m_config.seed);
      if (request.context)
        e.context =
            embedTokens(batch.contextTokens, batch.maxKey, m_config.inputDim, m_config.seed);
    }
    e.x = e.x.to(device);
    if (e.context.defined()) e.context = e.context.to(device);
    return e;
  }

  torch::Tensor layer(int, const torch::Tensor& x, LayerContext& ctx) override {
    AttentionInput in;
    in.x = x;
    in.context = ctx.context;
    in.mask = ctx.mask;
    if (m_config.scale == ScaleKind::HeadSize) {
      in.scale = 1.0 / std::sqrt(static_cast<double>(m_config.headSize()));
      in.scaleText = "hd**-0.5";
    } else {
      in.scale = 1.0 / std::sqrt(static_cast<double>(m_config.dModel));
      in.scaleText = "C**-0.5";
    }
    in.buffers = ctx.buffers;
    return (m_fused ? m_fused->forward(in, *ctx.rec) : m_perHead->forward(in, *ctx.rec)).out;
  }

 private:
  ToyConfig m_config;
  FusedAttention m_fused{nullptr};
  PerHeadAttention m_perHead{nullptr};
  std::shared_ptr<torch::nn::Module> m_module;
  std::unique_ptr<Tokenizer> m_tokenizer;
};

}  // namespace

std::shared_ptr<Model> makeToyModel(const ToyConfig& config) {
  return std::make_shared<TransformerModel>(std::make_shared<ToyFamily>(config));
}

std::shared_ptr<Model> makeToyModel(const ToyConfig& config,
                                    const std::vector<NamedTensor>& weights) {
  auto family = std::make_shared<ToyFamily>(config);
  loadStateDict(family->module(), weights);
  return std::make_shared<TransformerModel>(family);
}

}  // namespace attnscope
