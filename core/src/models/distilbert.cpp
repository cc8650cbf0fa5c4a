// SPDX-License-Identifier: GPL-3.0-or-later
// DistilBERT (Hugging Face's DistilBertModel / DistilBertForMaskedLM / …): BERT's post-norm layer
// under other names (q_lin, k_lin, v_lin, out_lin, sa_layer_norm, ffn.lin1/lin2,
// output_layer_norm) and no token types: the distilbert family.
#include "models/bert.h"
#include "models/distilbert_config.h"
#include "models/encoder_family.h"
#include "models/transformer_model.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/post_norm_encoder_layer.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// transformer.layer.{i}: attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1/lin2,
/// output_layer_norm.
const PostNormNames kDistilBertNames{"attention.q_lin",   "attention.k_lin",  "attention.v_lin",
                                     "attention.out_lin", "sa_layer_norm",    "ffn.lin1",
                                     "ffn.lin2",          "output_layer_norm"};

class DistilBertFamily final : public EncoderFamily {
 public:
  explicit DistilBertFamily(const std::string& folder)
      : EncoderFamily(folder),
        m_c(DistilBertConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": activation")) {
    const int64_t C = m_c.hiddenSize;
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(m_c.vocabSize, C));
    m_position =
        addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_c.maxPositions, C));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(C, 1e-12));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_blocks.push_back(addPostNormLayer(root, "transformer.layer." + std::to_string(l) + ".",
                                          kDistilBertNames, C, m_c.intermediateSize, 1e-12));
    if (hasTensor("vocab_transform.weight", "distilbert.")) {
      m_headDense = addModule(root, "vocab_transform", Linear(C, C));
      m_headNorm = addModule(root, "vocab_layer_norm", LayerNorm(C, 1e-12));
      m_headBias = addParameter(root, "vocab_projector.bias", torch::empty({m_c.vocabSize}));
    }
    WeightRules rules;
    rules.family = "DistilBERT";
    rules.prefixes = {"distilbert."};
    rules.ignoredNames = {"vocab_projector.weight"};  // tied to the word embeddings
    load(root, rules, m_config.source());
  }

  ModelInfo info() const override {
    ModelInfo i =
        encoderInfo("distilbert", m_c.numLayers, m_c.numHeads, m_c.hiddenSize, m_c.maxPositions);
    if (!m_headDense) i.maskToken.clear();
    return i;
  }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor&) override {
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options());
    return m_embedNorm(m_word(ids) + m_position(positions).unsqueeze(0));
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    return postNormEncoderLayer(x, m_blocks[static_cast<std::size_t>(index)], m_c.numHeads, m_act,
                                ctx.mask, ctx.buffers, *ctx.rec, ctx.valueNorms);
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_act, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  DistilBertConfig m_c;
  Activation m_act;
  EmbeddingTable m_word{nullptr}, m_position{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_headNorm{nullptr};
  Linear m_headDense{nullptr};
  torch::Tensor m_headBias;
  std::vector<PostNormEncoderParts> m_blocks;  // transformer.layer.{i}
};

}  // namespace

std::shared_ptr<Model> openDistilBertFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<DistilBertFamily>(folder), name);
}

}  // namespace attnscope
