// SPDX-License-Identifier: GPL-3.0-or-later
// OLMo 2 (Hugging Face's Olmo2ForCausalLM, model_type olmo2): Llama's projections, rotary and
// SwiGLU MLP in a post-norm layout without input norms,
//   h = x + post_attention_layernorm(attn(x)),  out = h + post_feedforward_layernorm(mlp(h)),
// and q and k normalised by an RMSNorm over the whole projection (H·hd for q, Hkv·hd for k),
// before the split into heads and before the rotation (Qwen3 and Gemma 3 normalise each head).
// The config is LlamaConfig's (llama_config.cpp: rms_norm_eps defaults to 1e-5 here).
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/llama_config.h"
#include "models/transformer_model.h"
#include "nn/gated_mlp.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/rms_norm.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// layers.{i}: self_attn.{q,k,v,o}_proj, self_attn.q_norm [H·hd], self_attn.k_norm [Hkv·hd],
/// post_attention_layernorm, mlp.{gate,up,down}_proj, post_feedforward_layernorm.
struct Olmo2Layer {
  RotaryAttention attn;  // q_norm and k_norm over the whole projection (wholeNorms)
  RmsNorm postAttentionNorm{nullptr}, postMlpNorm{nullptr};
  GatedMlp mlp;

  Olmo2Layer(torch::nn::Module& root, const std::string& p, const LlamaConfig& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim, I = c.intermediateSize;
    const double eps = c.rmsNormEps;
    attn.q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, c.qkvBias));
    attn.k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    attn.v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    attn.o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, c.outputBias));
    attn.qNorm = addModule(root, p + "self_attn.q_norm", RmsNorm(c.numHeads * hd, eps));
    attn.kNorm = addModule(root, p + "self_attn.k_norm", RmsNorm(c.numKvHeads * hd, eps));
    attn.wholeNorms = true;
    attn.heads = c.numHeads;
    attn.kvHeads = c.numKvHeads;
    postAttentionNorm = addModule(root, p + "post_attention_layernorm", RmsNorm(C, eps));
    mlp.gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, c.mlpBias));
    mlp.up = addModule(root, p + "mlp.up_proj", Linear(C, I, c.mlpBias));
    mlp.down = addModule(root, p + "mlp.down_proj", Linear(I, C, c.mlpBias));
    postMlpNorm = addModule(root, p + "post_feedforward_layernorm", RmsNorm(C, eps));
  }
};

class Olmo2Family final : public DecoderFamily {
 public:
  explicit Olmo2Family(const std::string& folder)
      : DecoderFamily(folder),
        m_c(LlamaConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(rotaryOptions(m_c.ropeScaling, m_c.rotaryDim(), m_c.ropeTheta, m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "norm", RmsNorm(m_c.hiddenSize, m_c.rmsNormEps));
    WeightRules rules;
    rules.family = "OLMo 2 model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else an Olmo2Model: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    return decoderInfo("olmo2", m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                       rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, q, k, v and their norms, repeated k/v, merged heads; gate, up and their product.
    const uint64_t attention = static_cast<uint64_t>(m_c.numHeads) * m_c.headDim;
    return 4 * (4ull * m_c.hiddenSize + 6 * attention + 3ull * m_c.intermediateSize);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    Olmo2Layer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(m_c.headDim));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    int s = -1;
    // No input norm: the block reads x itself.
    torch::Tensor h =
        rotaryAttention(x, xStep, L.attn, m_rotary, ctx.positions, sdpa, ctx.valueNorms, rec, &s);
    h = L.postAttentionNorm(h);
    s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(attn_out)", "rmsnorm",
                   h, {s});
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.mlp.forward(residual, m_act, rec, residualStep, &s);
    h = L.postMlpNorm(h);
    s = rec.record("post_feedforward_layernorm", "self.post_feedforward_layernorm(mlp_out)",
                   "rmsnorm", h, {s});
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden);
  }

 private:
  LlamaConfig m_c;
  Activation m_act;
  RotaryCache m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<Olmo2Layer> m_layers;
  RmsNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openOlmo2Folder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<Olmo2Family>(folder), name);
}

}  // namespace attnscope
