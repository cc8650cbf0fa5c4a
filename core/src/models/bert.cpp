// SPDX-License-Identifier: GPL-3.0-or-later
// BERT (Hugging Face's BertModel / BertForMaskedLM / …ForSequenceClassification), RoBERTa (the same
// layers; positions offset by padding_idx + 1; XLM-RoBERTa is RoBERTa under another model_type and
// vocabulary) and ELECTRA's discriminator (embeddings narrower than the layers, projected): the
// bert family.
#include "models/bert.h"

#include <utility>

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

using BertFlavour = BertConfig::Flavour;

/// encoder.layer.{i}: attention.self.{query,key,value}, attention.output.{dense,LayerNorm},
/// intermediate.dense, output.{dense,LayerNorm}.
const PostNormNames kBertNames{"attention.self.query",
                               "attention.self.key",
                               "attention.self.value",
                               "attention.output.dense",
                               "attention.output.LayerNorm",
                               "intermediate.dense",
                               "output.dense",
                               "output.LayerNorm"};

class BertFamily final : public EncoderFamily {
 public:
  BertFamily(FolderParts parts, BertFlavour flavour)
      : EncoderFamily(std::move(parts)),
        m_c(BertConfig::fromReader(m_config, flavour)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")) {
    const int64_t C = m_c.hiddenSize, E = m_c.embeddingSize;
    const double eps = m_c.layerNormEps;
    const std::string prefix = flavour == BertFlavour::Bert      ? "bert."
                               : flavour == BertFlavour::Roberta ? "roberta."
                                                                 : "electra.";

    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(m_c.vocabSize, E));
    m_position =
        addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_c.maxPositions, E));
    if (m_c.typeVocabSize > 0)
      m_type =
          addModule(root, "embeddings.token_type_embeddings", EmbeddingTable(m_c.typeVocabSize, E));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(E, eps));
    if (E != C) m_project = addModule(root, "embeddings_project", Linear(E, C));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_blocks.push_back(addPostNormLayer(root, "encoder.layer." + std::to_string(l) + ".",
                                          kBertNames, C, m_c.intermediateSize, eps));
    // The masked-language-model head, when the checkpoint has one (not a BertModel's or ELECTRA's).
    const std::string head = flavour == BertFlavour::Roberta ? "lm_head." : "cls.predictions.";
    if (flavour != BertFlavour::Electra && hasTensor(head + "bias", prefix)) {
      const bool roberta = flavour == BertFlavour::Roberta;
      m_headDense = addModule(root, head + (roberta ? "dense" : "transform.dense"), Linear(C, E));
      m_headNorm = addModule(root, head + (roberta ? "layer_norm" : "transform.LayerNorm"),
                             LayerNorm(E, eps));
      m_headBias = addParameter(root, head + "bias", torch::empty({m_c.vocabSize}));
      m_headAct = roberta ? Activation::Gelu : m_act;
    }
    WeightRules rules;
    rules.family = flavour == BertFlavour::Bert      ? "BERT"
                   : flavour == BertFlavour::Roberta ? "RoBERTa"
                                                     : "ELECTRA";
    rules.prefixes = {prefix};
    rules.ignoredNames = {head + "decoder.weight",
                          head + "decoder.bias"};  // tied to the word embeddings
    load(root, rules, m_config.source());
  }

  ModelInfo info() const override {
    const bool roberta = m_c.flavour == BertFlavour::Roberta;
    const std::string kind = m_c.flavour == BertFlavour::Bert ? "bert"
                             : roberta ? m_config.string("model_type", "roberta")  // xlm-roberta
                                       : "electra";
    ModelInfo i = encoderInfo(kind, m_c.numLayers, m_c.numHeads, m_c.hiddenSize,
                              roberta ? m_c.maxPositions - m_c.padTokenId - 1 : m_c.maxPositions);
    if (!m_headDense) i.maskToken.clear();
    return i;
  }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) override {
    // RoBERTa counts positions from padding_idx + 1 (its position ids skip the padding row).
    const int64_t offset = m_c.flavour == BertFlavour::Roberta ? m_c.padTokenId + 1 : 0;
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options()) + offset;
    torch::Tensor x = m_word(ids) + m_position(positions).unsqueeze(0);
    if (m_type) x = x + m_type(typeIds);
    x = m_embedNorm(x);
    return m_project ? m_project(x) : x;
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    return postNormEncoderLayer(x, m_blocks[static_cast<std::size_t>(index)], m_c.numHeads, m_act,
                                ctx.mask, ctx.buffers, *ctx.rec, ctx.valueNorms);
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_headAct, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  BertConfig m_c;
  Activation m_act, m_headAct = Activation::Gelu;
  EmbeddingTable m_word{nullptr}, m_position{nullptr}, m_type{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_headNorm{nullptr};
  Linear m_project{nullptr}, m_headDense{nullptr};
  torch::Tensor m_headBias;
  std::vector<PostNormEncoderParts> m_blocks;  // encoder.layer.{i}
};

}  // namespace

std::shared_ptr<Model> openBertFolder(const std::string& folder, const std::string& name) {
  return openBertParts(FolderParts::read(folder), name);
}
std::shared_ptr<Model> openBertParts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(
      std::make_shared<BertFamily>(std::move(parts), BertFlavour::Bert), name);
}
std::shared_ptr<Model> openRobertaFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(
      std::make_shared<BertFamily>(FolderParts::read(folder), BertFlavour::Roberta), name);
}
std::shared_ptr<Model> openElectraFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(
      std::make_shared<BertFamily>(FolderParts::read(folder), BertFlavour::Electra), name);
}

}  // namespace attnscope
