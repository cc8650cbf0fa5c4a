// SPDX-License-Identifier: GPL-3.0-or-later
// ALBERT (Hugging Face's AlbertModel / AlbertForMaskedLM / …): factorised embeddings
// (embedding_size projected to hidden_size) and one group of post-norm layers whose weights every
// layer reuses: the albert family.
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

/// encoder.albert_layer_groups.{g}.albert_layers.{j}: attention.{query,key,value,dense,LayerNorm},
/// ffn, ffn_output, full_layer_layer_norm.
const PostNormNames kAlbertNames{"attention.query", "attention.key",        "attention.value",
                                 "attention.dense", "attention.LayerNorm",  "ffn",
                                 "ffn_output",      "full_layer_layer_norm"};

class AlbertFamily final : public EncoderFamily {
 public:
  explicit AlbertFamily(const std::string& folder) : EncoderFamily(folder) {
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
    const int embedding = c.integer({"embedding_size"}, 1, 1 << 16, 128);
    m_groups = c.integer({"num_hidden_groups"}, 1, 256, 1);
    m_inner = c.integer({"inner_group_num"}, 1, 64, 1);
    if (m_layers % m_groups != 0)
      c.fail("num_hidden_groups (" + std::to_string(m_groups) +
             ") must divide num_hidden_layers (" + std::to_string(m_layers) + ")");
    const double eps = c.number("layer_norm_eps", 1e-12);
    m_act = parseActivation(c.string("hidden_act", "gelu_new"), c.source() + ": hidden_act");
    checkVocabulary(m_vocab);

    torch::nn::Module& root = *m_root;
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(m_vocab, embedding));
    m_position =
        addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_positions, embedding));
    if (types > 0)
      m_type =
          addModule(root, "embeddings.token_type_embeddings", EmbeddingTable(types, embedding));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(embedding, eps));
    m_project = addModule(root, "encoder.embedding_hidden_mapping_in", Linear(embedding, m_width));
    for (int g = 0; g < m_groups; ++g) {
      for (int j = 0; j < m_inner; ++j) {
        m_shared.push_back(addPostNormLayer(root,
                                            "encoder.albert_layer_groups." + std::to_string(g) +
                                                ".albert_layers." + std::to_string(j) + ".",
                                            kAlbertNames, m_width, inner, eps));
      }
    }
    if (hasTensor("predictions.bias", "albert.")) {
      m_headDense = addModule(root, "predictions.dense", Linear(m_width, embedding));
      m_headNorm = addModule(root, "predictions.LayerNorm", LayerNorm(embedding, eps));
      m_headBias = addParameter(root, "predictions.bias", torch::empty({m_vocab}));
    }
    WeightRules rules;
    rules.family = "ALBERT";
    rules.prefixes = {"albert."};
    rules.ignoredNames = {"predictions.decoder.weight", "predictions.decoder.bias"};  // tied
    load(root, rules, c.source());
  }

  ModelInfo info() const override {
    // Every layer (and each inner layer of a group) is shown, although they share weights.
    ModelInfo i = encoderInfo("albert", m_layers * m_inner, m_heads, m_width, m_positions);
    i.parameterBytes = parameterBytes(*m_root);
    if (!m_headDense) i.maskToken.clear();
    return i;
  }
  torch::nn::Module& module() override { return *m_root; }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) override {
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options());
    torch::Tensor x = m_word(ids) + m_position(positions).unsqueeze(0);
    if (m_type) x = x + m_type(typeIds);
    return m_project(m_embedNorm(x));
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    // Hugging Face: layer i uses group i / (L / G); each group runs its inner layers in turn.
    const int outer = index / m_inner, inner = index % m_inner;
    const int group = outer / (m_layers / m_groups);
    const PostNormEncoderParts& l = m_shared[static_cast<std::size_t>(group * m_inner + inner)];
    return postNormEncoderLayer(x, l, m_heads, m_act, ctx.mask, ctx.buffers, *ctx.rec,
                                ctx.valueNorms);
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_act, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  int m_vocab = 0, m_width = 0, m_layers = 0, m_heads = 0, m_positions = 0, m_groups = 1,
      m_inner = 1;
  Activation m_act = Activation::GeluTanh;
  std::shared_ptr<torch::nn::Module> m_root = std::make_shared<torch::nn::Module>();
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
