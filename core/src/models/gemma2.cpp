// SPDX-License-Identifier: GPL-3.0-or-later
// Gemma 2 and Gemma 3's text model (Hugging Face's Gemma2ForCausalLM, Gemma3ForCausalLM and the
// language model of Gemma3ForConditionalGeneration): Gemma's layer (GeGLU, (1 + w) RMSNorm,
// embeddings times sqrt(hidden)) with an RMSNorm after the attention and after the MLP as well as
// before them, local sliding-window layers between global ones, scores scaled by
// query_pre_attn_scalar^-0.5, and soft-capping: cap·tanh(x / cap) of the attention scores before
// the mask (Gemma 2) and of the final logits. Gemma 3 adds per-head q/k RMSNorm, its own rotary
// base on the local layers and rope scaling on the global ones only.
#include <cmath>
#include <sstream>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/gemma2_config.h"
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

/// layers.{i}: input_layernorm, self_attn.{q,k,v,o}_proj (+ q_norm, k_norm in Gemma 3),
/// post_attention_layernorm, pre_feedforward_layernorm, mlp.{gate,up,down}_proj,
/// post_feedforward_layernorm. Every norm is (1 + w).
struct Gemma2Layer {
  RmsNorm inputNorm{nullptr}, postAttentionNorm{nullptr}, preMlpNorm{nullptr}, postMlpNorm{nullptr};
  RotaryAttention attn;
  GatedMlp mlp;

  Gemma2Layer(torch::nn::Module& root, const std::string& p, const Gemma2Config& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim, I = c.intermediateSize;
    const double eps = c.rmsNormEps;
    const bool bias = c.attentionBias;
    inputNorm = addModule(root, p + "input_layernorm", RmsNorm(C, eps, true));
    attn.q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, bias));
    attn.k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, bias));
    attn.v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, bias));
    attn.o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, bias));
    if (c.qkNorm) {  // Gemma 3
      attn.qNorm = addModule(root, p + "self_attn.q_norm", RmsNorm(hd, eps, true));
      attn.kNorm = addModule(root, p + "self_attn.k_norm", RmsNorm(hd, eps, true));
    }
    attn.heads = c.numHeads;
    attn.kvHeads = c.numKvHeads;
    postAttentionNorm = addModule(root, p + "post_attention_layernorm", RmsNorm(C, eps, true));
    preMlpNorm = addModule(root, p + "pre_feedforward_layernorm", RmsNorm(C, eps, true));
    mlp.gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, false));
    mlp.up = addModule(root, p + "mlp.up_proj", Linear(C, I, false));
    mlp.down = addModule(root, p + "mlp.down_proj", Linear(I, C, false));
    postMlpNorm = addModule(root, p + "post_feedforward_layernorm", RmsNorm(C, eps, true));
  }
};

/// "50" for 50.0, "0.5" for 0.5: numbers as the config wrote them, for the trace.
std::string gemmaNumber(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

class Gemma2Family final : public DecoderFamily {
 public:
  explicit Gemma2Family(FolderParts parts)
      : DecoderFamily(std::move(parts)),
        m_c(Gemma2Config::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_activation")),
        m_global(rotaryOptions(m_c.ropeScaling, m_c.headDim, m_c.ropeTheta, m_c.maxPositions)),
        m_local(rotaryOptions(m_c.ropeLocalScaling, m_c.headDim, m_c.ropeLocalTheta,
                              m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "norm", RmsNorm(m_c.hiddenSize, m_c.rmsNormEps, true));
    WeightRules rules;
    rules.family = m_c.modelType == "gemma2" ? "Gemma 2 model" : "Gemma 3 text model";
    rules.prefixes = {"model."};
    if (m_c.modelType == "gemma3") {
      // Gemma3ForConditionalGeneration: transformers up to 4.51 saved language_model.model.*,
      // later versions model.language_model.*; the vision tower and projector are not shown.
      rules.prefixes = {"language_model.model.", "model.language_model."};
      rules.ignoredPrefixes = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                               "model.multi_modal_projector."};
    }
    rules.ignoredSuffixes = {"rotary_emb.inv_freq", "rotary_emb_local.inv_freq"};
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight", "language_model.lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.") ||
               hasTensor("language_model.lm_head.weight", "")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
      rules.tied = {{"lm_head.weight", "language_model.lm_head.weight"}};
    }  // else a Gemma2Model: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    ModelInfo i =
        decoderInfo(m_c.modelType, m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                    rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
    // Local and global layers: each layer builds its own window (layer()), so no window is
    // applied to the whole run; the info says which layers have one.
    for (int l = 0; l < m_c.numLayers; ++l)
      i.layerWindows.push_back(m_c.windowed(l) ? m_c.slidingWindow : 0);
    i.attentionSoftcap = m_c.attnSoftcap;
    return i;
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copies, q, k, v, repeated k/v, merged heads; gate, up and their product.
    const uint64_t attention = static_cast<uint64_t>(m_c.numHeads) * m_c.headDim;
    return 4 * (5ull * m_c.hiddenSize + 4 * attention + 3ull * m_c.intermediateSize);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override {
    // Times sqrt(hidden_size) rounded to the hidden dtype (float32) first, as transformers does;
    // the tied head reads the unscaled table.
    return m_embed(ids) * static_cast<float>(std::sqrt(static_cast<double>(m_c.hiddenSize)));
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    Gemma2Layer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const bool local = m_c.slidingLayers[static_cast<std::size_t>(index)];
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    const int normStep =
        rec.record("input_layernorm", "self.input_layernorm(x)", "rmsnorm", h, {xStep});
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    if (m_c.windowed(index)) {
      sdpa.mask = windowMask(ctx, m_c.slidingWindow);
      sdpa.maskText = "scaled + mask (sliding window " + std::to_string(m_c.slidingWindow) + ")";
    }
    sdpa.scale = 1.0 / std::sqrt(m_c.queryPreAttnScalar);
    sdpa.scaleText = "query_pre_attn_scalar**-0.5 (" + gemmaNumber(m_c.queryPreAttnScalar) + ")";
    sdpa.softcap = m_c.attnSoftcap;
    sdpa.buffers = ctx.buffers;
    // Gemma 3's local layers rotate with rope_local_base_freq, unscaled; Gemma 2's two blocks
    // are the same.
    RotaryCache& rotary = local ? m_local : m_global;
    int s = -1;
    h = rotaryAttention(h, normStep, L.attn, rotary, ctx.positions, sdpa, ctx.valueNorms, rec, &s);
    h = L.postAttentionNorm(h);
    s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(attn_out)", "rmsnorm",
                   h, {s});
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.preMlpNorm(residual);
    s = rec.record("pre_feedforward_layernorm", "self.pre_feedforward_layernorm(x)", "rmsnorm", h,
                   {residualStep});
    h = L.mlp.forward(std::move(h), m_act, rec, s, &s);
    h = L.postMlpNorm(h);
    s = rec.record("post_feedforward_layernorm", "self.post_feedforward_layernorm(mlp_out)",
                   "rmsnorm", h, {s});
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    torch::Tensor out;
    if (m_head)
      out = m_head(hidden);
    else if (m_c.tieWordEmbeddings)
      out = linearForward(hidden, m_embed->weight, {});
    else
      return {};
    // final_logit_softcapping: divide, tanh, multiply, as transformers does.
    if (m_c.finalSoftcap > 0) out = out.div(m_c.finalSoftcap).tanh().mul(m_c.finalSoftcap);
    return out;
  }

 private:
  Gemma2Config m_c;
  Activation m_act;
  RotaryCache m_global, m_local;
  EmbeddingTable m_embed{nullptr};
  std::vector<Gemma2Layer> m_layers;
  RmsNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openGemma2Folder(const std::string& folder, const std::string& name) {
  return openGemma2Parts(FolderParts::read(folder), name);
}

std::shared_ptr<Model> openGemma2Parts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<Gemma2Family>(std::move(parts)), name);
}

}  // namespace attnscope
