// SPDX-License-Identifier: GPL-3.0-or-later
// BERT (Hugging Face's BertModel / BertForMaskedLM / …ForSequenceClassification), RoBERTa (the same
// layers; positions offset by padding_idx + 1) and ELECTRA's discriminator (embeddings narrower
// than the layers, projected): the bert family.
#include "models/bert.h"

#include "models/encoder_family.h"
#include "models/transformer_model.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/post_norm_encoder_layer.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

enum class Flavour { Bert, Roberta, Electra };

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
  BertFamily(const std::string& folder, Flavour flavour)
      : EncoderFamily(folder), m_flavour(flavour) {
    const ConfigReader& c = m_config;
    m_vocab = c.integer({"vocab_size"}, 1, 1 << 22);
    m_width = c.integer({"hidden_size"}, 1, 1 << 16);
    m_layers = c.integer({"num_hidden_layers"}, 1, 256);
    m_heads = c.integer({"num_attention_heads"}, 1, 1024);
    if (m_width % m_heads != 0)
      c.fail("num_attention_heads (" + std::to_string(m_heads) + ") must divide hidden_size (" +
             std::to_string(m_width) + ")");
    const int inner = c.integer({"intermediate_size"}, 1, 1 << 18);
    m_positions = c.integer({"max_position_embeddings"}, 1, 1 << 20);
    const int types = c.integer({"type_vocab_size"}, 0, 1 << 10, 2);
    const int embedding = c.integer({"embedding_size"}, 1, 1 << 16, m_width);
    const double eps = c.number("layer_norm_eps", 1e-12);
    m_act = parseActivation(c.string("hidden_act", "gelu"), c.source() + ": hidden_act");
    m_padding = c.integer({"pad_token_id"}, 0, 1 << 22, flavour == Flavour::Roberta ? 1 : 0);
    checkVocabulary(m_vocab);
    const std::string prefix = flavour == Flavour::Bert      ? "bert."
                               : flavour == Flavour::Roberta ? "roberta."
                                                             : "electra.";

    torch::nn::Module& root = *m_root;
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(m_vocab, embedding));
    m_position =
        addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_positions, embedding));
    if (types > 0)
      m_type =
          addModule(root, "embeddings.token_type_embeddings", EmbeddingTable(types, embedding));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(embedding, eps));
    if (embedding != m_width)
      m_project = addModule(root, "embeddings_project", Linear(embedding, m_width));
    for (int l = 0; l < m_layers; ++l)
      m_blocks.push_back(addPostNormLayer(root, "encoder.layer." + std::to_string(l) + ".",
                                          kBertNames, m_width, inner, eps));
    // The masked-language-model head, when the checkpoint has one (not a BertModel's or ELECTRA's).
    const std::string head = flavour == Flavour::Roberta ? "lm_head." : "cls.predictions.";
    if (flavour != Flavour::Electra && hasTensor(head + "bias", prefix)) {
      const bool roberta = flavour == Flavour::Roberta;
      m_headDense = addModule(root, head + (roberta ? "dense" : "transform.dense"),
                              Linear(m_width, embedding));
      m_headNorm = addModule(root, head + (roberta ? "layer_norm" : "transform.LayerNorm"),
                             LayerNorm(embedding, eps));
      m_headBias = addParameter(root, head + "bias", torch::empty({m_vocab}));
      m_headAct = roberta ? Activation::Gelu : m_act;
    }
    WeightRules rules;
    rules.family = flavour == Flavour::Bert      ? "BERT"
                   : flavour == Flavour::Roberta ? "RoBERTa"
                                                 : "ELECTRA";
    rules.prefixes = {prefix};
    rules.ignoredNames = {head + "decoder.weight",
                          head + "decoder.bias"};  // tied to the word embeddings
    load(root, rules, c.source());
  }

  ModelInfo info() const override {
    const char* kind = m_flavour == Flavour::Bert      ? "bert"
                       : m_flavour == Flavour::Roberta ? "roberta"
                                                       : "electra";
    ModelInfo i =
        encoderInfo(kind, m_layers, m_heads, m_width,
                    m_flavour == Flavour::Roberta ? m_positions - m_padding - 1 : m_positions);
    i.parameterBytes = parameterBytes(*m_root);
    if (!m_headDense) i.maskToken.clear();
    return i;
  }
  torch::nn::Module& module() override { return *m_root; }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) override {
    // RoBERTa counts positions from padding_idx + 1 (its position ids skip the padding row).
    const int64_t offset = m_flavour == Flavour::Roberta ? m_padding + 1 : 0;
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options()) + offset;
    torch::Tensor x = m_word(ids) + m_position(positions).unsqueeze(0);
    if (m_type) x = x + m_type(typeIds);
    x = m_embedNorm(x);
    return m_project ? m_project(x) : x;
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    return postNormEncoderLayer(x, m_blocks[static_cast<std::size_t>(index)], m_heads, m_act,
                                ctx.mask, ctx.buffers, *ctx.rec, ctx.valueNorms);
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_headAct, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  Flavour m_flavour;
  int m_vocab = 0, m_width = 0, m_layers = 0, m_heads = 0, m_positions = 0, m_padding = 0;
  Activation m_act = Activation::Gelu, m_headAct = Activation::Gelu;
  std::shared_ptr<torch::nn::Module> m_root = std::make_shared<torch::nn::Module>();
  EmbeddingTable m_word{nullptr}, m_position{nullptr}, m_type{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_headNorm{nullptr};
  Linear m_project{nullptr}, m_headDense{nullptr};
  torch::Tensor m_headBias;
  std::vector<PostNormEncoderParts> m_blocks;  // encoder.layer.{i}
};

}  // namespace

std::shared_ptr<Model> openBertFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BertFamily>(folder, Flavour::Bert),
                                            name);
}
std::shared_ptr<Model> openRobertaFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BertFamily>(folder, Flavour::Roberta),
                                            name);
}
std::shared_ptr<Model> openElectraFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BertFamily>(folder, Flavour::Electra),
                                            name);
}

}  // namespace attnscope
