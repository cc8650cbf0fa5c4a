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
#include "nn/attention_mask.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rms_norm.h"
#include "nn/rotary_embedding.h"
#include "nn/scaled_dot_product.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// layers.{i}: input_layernorm, self_attn.{q,k,v,o}_proj (+ q_norm, k_norm for Qwen3),
/// post_attention_layernorm, mlp.{gate,up,down}_proj.
struct LlamaLayer {
  RmsNorm inputNorm{nullptr}, postNorm{nullptr}, qNorm{nullptr}, kNorm{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr}, gate{nullptr}, up{nullptr}, down{nullptr};

  LlamaLayer(torch::nn::Module& root, const std::string& p, const LlamaConfig& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim, I = c.intermediateSize;
    inputNorm = addModule(root, p + "input_layernorm", RmsNorm(C, c.rmsNormEps, c.normUnitOffset));
    q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, c.qkvBias));
    k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, c.outputBias));
    if (c.qkNorm) {
      qNorm = addModule(root, p + "self_attn.q_norm", RmsNorm(hd, c.rmsNormEps));
      kNorm = addModule(root, p + "self_attn.k_norm", RmsNorm(hd, c.rmsNormEps));
    }
    postNorm =
        addModule(root, p + "post_attention_layernorm", RmsNorm(C, c.rmsNormEps, c.normUnitOffset));
    gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, c.mlpBias));
    up = addModule(root, p + "mlp.up_proj", Linear(C, I, c.mlpBias));
    down = addModule(root, p + "mlp.down_proj", Linear(I, C, c.mlpBias));
  }
};

class LlamaFamily final : public DecoderFamily {
 public:
  explicit LlamaFamily(const std::string& folder)
      : DecoderFamily(folder),
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
                              maxPositions());
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
    const int64_t H = m_c.numHeads, Hkv = m_c.numKvHeads, hd = m_c.headDim;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    const int normStep =
        rec.record("input_layernorm", "self.input_layernorm(x)", "rmsnorm", h, {xStep});
    // [B, T, H·hd] -> [B, H, T, hd] (k and v: Hkv heads).
    const auto project = [&](Linear& proj, int64_t heads, const char* name) {
      const torch::Tensor p = proj(h);
      const int s = rec.record(std::string(name) + "_proj",
                               std::string("self.") + name + "_proj(x)", "linear", p, {normStep});
      const torch::Tensor t = splitHeads(p, heads);
      return std::make_pair(
          t, rec.record(name, std::string(name) + ".view(B, T, -1, hd).transpose(1, 2)", "permute",
                        t, {s}));
    };
    auto [q, qStep] = project(L.q, H, "q");
    auto [k, kStep] = project(L.k, Hkv, "k");
    auto [v, vStep] = project(L.v, Hkv, "v");
    if (m_c.qkNorm) {
      // Qwen3 normalises each head's query and key over head_dim before the rotation.
      q = L.qNorm(q);
      qStep = rec.record("q_norm", "self.q_norm(q)", "rmsnorm", q, {qStep});
      k = L.kNorm(k);
      kStep = rec.record("k_norm", "self.k_norm(k)", "rmsnorm", k, {kStep});
    }
    const auto& [cos, sin] = cosSin(ctx.positions);
    q = RotaryEmbedding::apply(q, cos, sin);
    const std::string rope = "apply_rotary_pos_emb (" + m_rotary.describe(hd) + ")";
    qStep = rec.record("q_rot", rope, "rotary", q, {qStep});
    k = RotaryEmbedding::apply(k, cos, sin);
    kStep = rec.record("k_rot", rope, "rotary", k, {kStep});
    if (Hkv != H) {
      const std::string op = "repeat_kv(·, " + std::to_string(H / Hkv) + ")";
      k = repeatKv(k, H / Hkv);
      kStep = rec.record("k_repeat", "k " + op, "repeat_kv", k, {kStep});
      v = repeatKv(v, H / Hkv);
      vStep = rec.record("v_repeat", "v " + op, "repeat_kv", v, {vStep});
    }
    SdpaOptions sdpa;
    sdpa.mask = m_c.windowed(index) && m_c.slidingFromLayer > 0 ? windowMask(ctx) : ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.o(t); }, "self.o_proj(merged)",
                   [&] { return outputWeightByHead(L.o->weight, H); }};
    tail.valueNorms = ctx.valueNorms;  // v has one head per query head here
    int s = -1;
    h = attentionTail({std::move(q), std::move(k), std::move(v), qStep, kStep, vStep}, sdpa, tail,
                      rec, &s);
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.postNorm(residual);
    s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)", "rmsnorm", h,
                   {residualStep});
    const MlpProjection gate{[&](const torch::Tensor& t) { return L.gate(t); },
                             "self.gate_proj(x)"};
    const MlpProjection up{[&](const torch::Tensor& t) { return L.up(t); }, "self.up_proj(x)"};
    const MlpProjection down{[&](const torch::Tensor& t) { return L.down(t); },
                             "self.down_proj(h)"};
    h = feedForward(std::move(h), up, m_act, down, &gate, rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    if (m_head) return m_head(hidden);
    if (m_c.tieWordEmbeddings) return linearForward(hidden, m_embed->weight, {});
    return {};
  }

 private:
  int maxPositions() const {
    // Dynamic scaling exists to run past the trained context: up to factor times it.
    if (m_c.ropeScaling.type == "dynamic")
      return static_cast<int>(std::min(1e8, m_c.maxPositions * m_c.ropeScaling.factor));
    return m_c.maxPositions;
  }

  /// cos and sin [T, rotaryDim] for this run's positions, computed once per run (every layer
  /// rotates by the same angles).
  const std::pair<torch::Tensor, torch::Tensor>& cosSin(const torch::Tensor& positions) {
    if (!m_cosSin.first.defined() || m_cosSin.first.size(0) != positions.size(0) ||
        m_cosSin.first.device() != positions.device() ||
        // Tensors made in inference mode cannot be saved for the backward of an attribution.
        (m_cosSin.first.is_inference() && !c10::InferenceMode::is_enabled()))
      m_cosSin = m_rotary.cosSin(positions);
    return m_cosSin;
  }

  /// The causal mask with Qwen's sliding window, for the windowed layers of a model whose first
  /// layers see every key.
  torch::Tensor windowMask(const LayerContext& ctx) const {
    MaskOptions o;
    o.keyLengths = *ctx.keyLengths;
    o.queries = o.keys = ctx.positions.size(0);
    o.causal = true;
    o.slidingWindow = m_c.slidingWindow;
    const torch::Tensor mask = buildMask(o);
    return mask.defined() ? mask.to(ctx.positions.device()) : mask;
  }

  LlamaConfig m_c;
  Activation m_act;
  RotaryEmbedding m_rotary;
  std::pair<torch::Tensor, torch::Tensor> m_cosSin;
  EmbeddingTable m_embed{nullptr};
  std::vector<LlamaLayer> m_layers;
  RmsNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openLlamaFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<LlamaFamily>(folder), name);
}

}  // namespace attnscope
