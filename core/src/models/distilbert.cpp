// SPDX-License-Identifier: GPL-3.0-or-later
// DistilBERT (Hugging Face's DistilBertModel / DistilBertForMaskedLM / …): BERT's post-norm layer
// under other names (q_lin, k_lin, v_lin, out_lin, sa_layer_norm, ffn.lin1/lin2,
// output_layer_norm) and no token types: the distilbert family.
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

/// transformer.layer.{i}: attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1/lin2,
/// output_layer_norm.
const PostNormNames kDistilBertNames{"attention.q_lin",   "attention.k_lin",  "attention.v_lin",
                                     "attention.out_lin", "sa_layer_norm",    "ffn.lin1",
                                     "ffn.lin2",          "output_layer_norm"};

class DistilBertFamily final : public EncoderFamily {
 public:
  explicit DistilBertFamily(const std::string& folder) : EncoderFamily(folder) {
    const ConfigReader& c = m_config;
    m_vocab = c.integer({"vocab_size"}, 1, 1 << 22);
    m_width = c.integer({"dim", "hidden_size"}, 1, 1 << 16);
    m_layers = c.integer({"n_layers", "num_hidden_layers"}, 1, 256);
    m_heads = c.integer({"n_heads", "num_attention_heads"}, 1, 1024);
    if (m_width % m_heads != 0)
      c.fail("n_heads (" + std::to_string(m_heads) + ") must divide dim (" +
             std::to_string(m_width) + ")");
    const int inner = c.integer({"hidden_dim", "intermediate_size"}, 1, 1 << 18);
    m_positions = c.integer({"max_position_embeddings"}, 1, 1 << 20);
    m_act = parseActivation(c.string("activation", "gelu"), c.source() + ": activation");
    checkVocabulary(m_vocab);

    torch::nn::Module& root = *m_root;
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(m_vocab, m_width));
    m_position =
        addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_positions, m_width));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(m_width, 1e-12));
    for (int l = 0; l < m_layers; ++l)
      m_blocks.push_back(addPostNormLayer(root, "transformer.layer." + std::to_string(l) + ".",
                                          kDistilBertNames, m_width, inner, 1e-12));
    if (hasTensor("vocab_transform.weight", "distilbert.")) {
      m_headDense = addModule(root, "vocab_transform", Linear(m_width, m_width));
      m_headNorm = addModule(root, "vocab_layer_norm", LayerNorm(m_width, 1e-12));
      m_headBias = addParameter(root, "vocab_projector.bias", torch::empty({m_vocab}));
    }
    WeightRules rules;
    rules.family = "DistilBERT";
    rules.prefixes = {"distilbert."};
    rules.ignoredNames = {"vocab_projector.weight"};  // tied to the word embeddings
    load(root, rules, c.source());
  }

  ModelInfo info() const override {
    ModelInfo i = encoderInfo("distilbert", m_layers, m_heads, m_width, m_positions);
    i.parameterBytes = parameterBytes(*m_root);
    if (!m_headDense) i.maskToken.clear();
    return i;
  }
  torch::nn::Module& module() override { return *m_root; }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor&) override {
    const torch::Tensor positions = torch::arange(ids.size(1), ids.options());
    return m_embedNorm(m_word(ids) + m_position(positions).unsqueeze(0));
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    return postNormEncoderLayer(x, m_blocks[static_cast<std::size_t>(index)], m_heads, m_act,
                                ctx.mask, ctx.buffers, *ctx.rec, ctx.valueNorms);
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_act, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  int m_vocab = 0, m_width = 0, m_layers = 0, m_heads = 0, m_positions = 0;
  Activation m_act = Activation::Gelu;
  std::shared_ptr<torch::nn::Module> m_root = std::make_shared<torch::nn::Module>();
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
