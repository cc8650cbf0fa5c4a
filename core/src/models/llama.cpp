// SPDX-License-Identifier: GPL-3.0-or-later
// Llama (Llama 2/3, TinyLlama, SmolLM), Mistral, Qwen2, Qwen3 and Gemma (Hugging Face's LlamaModel
// / LlamaForCausalLM and their copies): the llama family. One pre-RMSNorm block: rotary positions
// on separate q/k/v projections, grouped-query attention, a gated MLP. The five model types
// differ only in config flags (llama_config.cpp): biases, per-head q/k norms, sliding windows,
// Gemma's (1 + w) norms, scaled embeddings and GeGLU.
#include "models/decoder_models.h"

#include <cmath>
#include <filesystem>
#include <utility>

#include "models/decoder_family.h"
#include "models/llama_config.h"
#include "models/transformer_model.h"
#include "nn/gated_mlp.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/rms_norm.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// layers.{i}: input_layernorm, self_attn.{q,k,v,o}_proj (+ q_norm, k_norm for Qwen3),
/// post_attention_layernorm, mlp.{gate,up,down}_proj.
struct LlamaLayer {
  RmsNorm inputNorm{nullptr}, postNorm{nullptr};
  RotaryAttention attn;
  GatedMlp mlp;

  LlamaLayer(torch::nn::Module& root, const std::string& p, const LlamaConfig& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim, I = c.intermediateSize;
    inputNorm = addModule(root, p + "input_layernorm", RmsNorm(C, c.rmsNormEps, c.normUnitOffset));
    attn.q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, c.qkvBias));
    attn.k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    attn.v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    attn.o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, c.outputBias));
    if (c.qkNorm) {  // Qwen3
      attn.qNorm = addModule(root, p + "self_attn.q_norm", RmsNorm(hd, c.rmsNormEps));
      attn.kNorm = addModule(root, p + "self_attn.k_norm", RmsNorm(hd, c.rmsNormEps));
    }
    attn.heads = c.numHeads;
    attn.kvHeads = c.numKvHeads;
    postNorm =
        addModule(root, p + "post_attention_layernorm", RmsNorm(C, c.rmsNormEps, c.normUnitOffset));
    mlp.gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, c.mlpBias));
    mlp.up = addModule(root, p + "mlp.up_proj", Linear(C, I, c.mlpBias));
    mlp.down = addModule(root, p + "mlp.down_proj", Linear(I, C, c.mlpBias));
  }
};

class LlamaFamily final : public DecoderFamily {
 public:
  explicit LlamaFamily(FolderParts parts)
      : DecoderFamily(std::move(parts)),
        m_c(LlamaConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(rotaryOptions(m_c.ropeScaling, m_c.rotaryDim(), m_c.ropeTheta, m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "norm", RmsNorm(m_c.hiddenSize, m_c.rmsNormEps, m_c.normUnitOffset));
    WeightRules rules;
    rules.family = "Llama-family model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};  // a buffer older checkpoints saved
    if (m_c.tieWordEmbeddings) {
      // One matrix for both: a file may store it under either name (or both).
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a LlamaModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  /// Value-weighted norms: its layer writes them from v and o_proj (one value head per query head).
  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    ModelInfo i = decoderInfo("llama", m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                              rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
    i.kind = m_c.modelType;
    i.name = m_c.modelType;
    // A window that covers every layer is one mask for the whole run; Qwen's partial windows
    // are built per layer (layer()).
    if (m_c.slidingFromLayer == 0) i.slidingWindow = m_c.slidingWindow;
    return i;
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, q, k, v, repeated k/v, merged heads; gate, up and their product.
    const uint64_t attention = static_cast<uint64_t>(m_c.numHeads) * m_c.headDim;
    return 4 * (4ull * m_c.hiddenSize + 4 * attention + 3ull * m_c.intermediateSize);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override {
    if (!m_c.scaleEmbeddings) return m_embed(ids);
    // Gemma: times sqrt(hidden_size), rounded to the hidden dtype first as transformers does
    // (float32 here; the tied head reads the unscaled table).
    return m_embed(ids) * static_cast<float>(std::sqrt(static_cast<double>(m_c.hiddenSize)));
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    LlamaLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    const int normStep =
        rec.record("input_layernorm", "self.input_layernorm(x)", "rmsnorm", h, {xStep});
    SdpaOptions sdpa;
    sdpa.mask = m_c.windowed(index) && m_c.slidingFromLayer > 0
                    ? windowMask(ctx, m_c.slidingWindow)  // Qwen's partial windows
                    : ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(m_c.headDim));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    int s = -1;
    h = rotaryAttention(h, normStep, L.attn, m_rotary, ctx.positions, sdpa, ctx.valueNorms, rec,
                        &s);
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.postNorm(residual);
    s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)", "rmsnorm", h,
                   {residualStep});
    h = L.mlp.forward(std::move(h), m_act, rec, s, &s);
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
  std::vector<LlamaLayer> m_layers;
  RmsNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openLlamaFolder(const std::string& folder, const std::string& name) {
  return openLlamaParts(FolderParts::read(folder), name);
}

std::shared_ptr<Model> openLlamaParts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<LlamaFamily>(std::move(parts)), name);
}

}  // namespace attnscope
