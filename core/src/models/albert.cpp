// SPDX-License-Identifier: GPL-3.0-or-later
// ALBERT (Hugging Face's AlbertModel / AlbertForMaskedLM / …): factorised embeddings
// (embedding_size projected to hidden_size) and one group of post-norm layers whose weights every
// layer reuses: the albert family.
#include "models/bert.h"
#include "models/bert_config.h"
#include "models/encoder_family.h"
#include "models/transformer_model.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/post_norm_encoder_layer.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// encoder.albert_layer_groups.{g}.albert_layers.{j}: attention.{query,key,value,dense,LayerNorm},
/// ffn, ffn_output, full_layer_layer_norm.
const PostNormNames kAlbertNames{"attention.query", "attention.key",        "attention.value",
                                 "attention.dense", "attention.LayerNorm",  "ffn",
                                 "ffn_output",      "full_layer_layer_norm"};

class AlbertFamily final : public EncoderFamily {
 public:
  explicit AlbertFamily(const std::string& folder)
      : EncoderFamily(folder),
        m_c(BertConfig::fromReader(m_config, BertConfig::Flavour::Albert)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")) {
    const int64_t C = m_c.hiddenSize, E = m_c.embeddingSize;
    const double eps = m_c.layerNormEps;
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(m_c.vocabSize, E));
    m_position =
        addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_c.maxPositions, E));
    if (m_c.typeVocabSize > 0)
      m_type =
          addModule(root, "embeddings.token_type_embeddings", EmbeddingTable(m_c.typeVocabSize, E));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(E, eps));
    m_project = addModule(root, "encoder.embedding_hidden_mapping_in", Linear(E, C));
    for (int g = 0; g < m_c.numHiddenGroups; ++g) {
      for (int j = 0; j < m_c.innerGroupNum; ++j) {
        m_shared.push_back(addPostNormLayer(root,
                                            "encoder.albert_layer_groups." + std::to_string(g) +
                                                ".albert_layers." + std::to_string(j) + ".",
                                            kAlbertNames, C, m_c.intermediateSize, eps));
      }
    }
    if (hasTensor("predictions.bias", "albert.")) {
      m_headDense = addModule(root, "predictions.dense", Linear(C, E));
      m_headNorm = addModule(root, "predictions.LayerNorm", LayerNorm(E, eps));
      m_headBias = addParameter(root, "predictions.bias", torch::empty({m_c.vocabSize}));
    }
    WeightRules rules;
    rules.family = "ALBERT";
    rules.prefixes = {"albert."};
    rules.ignoredNames = {"predictions.decoder.weight", "predictions.decoder.bias"};  // tied
    load(root, rules, m_config.source());
  }

  ModelInfo info() const override {
    // Every layer (and each inner layer of a group) is shown, although they share weights.
    ModelInfo i = encoderInfo("albert", m_c.numLayers * m_c.innerGroupNum, m_c.numHeads,
                              m_c.hiddenSize, m_c.maxPositions);
    if (!m_headDense) i.maskToken.clear();
    return i;
  }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) override {
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options());
    torch::Tensor x = m_word(ids) + m_position(positions).unsqueeze(0);
    if (m_type) x = x + m_type(typeIds);
    return m_project(m_embedNorm(x));
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    // Hugging Face: layer i uses group i / (L / G); each group runs its inner layers in turn.
    const int perGroup = m_c.innerGroupNum;
    const int outer = index / perGroup, inner = index % perGroup;
    const int group = outer / (m_c.numLayers / m_c.numHiddenGroups);
    const PostNormEncoderParts& l = m_shared[static_cast<std::size_t>(group * perGroup + inner)];
    return postNormEncoderLayer(x, l, m_c.numHeads, m_act, ctx.mask, ctx.buffers, *ctx.rec,
                                ctx.valueNorms);
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_act, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  BertConfig m_c;
  Activation m_act;
  EmbeddingTable m_word{nullptr}, m_position{nullptr}, m_type{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_headNorm{nullptr};
  Linear m_project{nullptr}, m_headDense{nullptr};
  torch::Tensor m_headBias;
  std::vector<PostNormEncoderParts> m_shared;
};

}  // namespace

std::shared_ptr<Model> openAlbertFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<AlbertFamily>(folder), name);
}

}  // namespace attnscope
