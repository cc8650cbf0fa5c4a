// SPDX-License-Identifier: GPL-3.0-or-later
// Mixtral (Hugging Face's MixtralForCausalLM, model_type mixtral), Qwen2-MoE (qwen2_moe), Qwen3-MoE
// (qwen3_moe) and OLMoE (olmoe): Llama's (Mistral's, Qwen2's, Qwen3's, OLMo 2's) attention block
// with a sparse mixture of experts in place of the MLP (nn/sparse_moe_block.h). The router's choice
// for every token (experts and weights) is handed to the run (LayerContext::routing ->
// AttentionResult::routerExperts/routerWeights). Mixtral: block_sparse_moe.gate and
// block_sparse_moe.experts.{e}.w1 (gate), w3 (up), w2 (down), top-2 of 8 renormalised, a sliding
// window when configured. Qwen2-MoE: q/k/v biases, Qwen3-MoE's expert names and dense layers, and
// mlp.shared_expert.{gate,up,down}_proj, which every token goes through, scaled by
// sigmoid(mlp.shared_expert_gate(x)). Qwen3-MoE: per-head q/k RMSNorm, mlp.gate and
// mlp.experts.{e}.{gate,up,down}_proj, renormalised only with norm_topk_prob, dense layers
// (mlp.{gate,up,down}_proj) where mlp_only_layers or decoder_sparse_step say so. OLMoE: q/k RMSNorm
// over the whole projection (H·hd, Hkv·hd), Qwen3-MoE's expert names, top 8 of 64, renormalised
// only with norm_topk_prob.
#include <algorithm>
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/mixtral_config.h"
#include "models/transformer_model.h"
#include "nn/gated_mlp.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/rms_norm.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"
#include "nn/sparse_moe_block.h"

namespace attnscope {
namespace {

/// layers.{i}: input_layernorm, self_attn.{q,k,v,o}_proj (+ q_norm, k_norm for Qwen3-MoE),
/// post_attention_layernorm, and the experts (+ Qwen2-MoE's shared expert; or Qwen-MoE's dense
/// mlp).
struct MixtralLayer {
  RmsNorm inputNorm{nullptr}, postNorm{nullptr};
  RotaryAttention attn;
  SparseMoeBlock moe;  // sparse layers
  GatedMlp mlp;        // Qwen-MoE's dense layers
  bool sparse = true;

  MixtralLayer(torch::nn::Module& root, const std::string& p, const MixtralConfig& m, bool isSparse)
      : sparse(isSparse) {
    const LlamaConfig& c = m.base;
    const int64_t C = c.hiddenSize, hd = c.headDim;
    inputNorm = addModule(root, p + "input_layernorm", RmsNorm(C, c.rmsNormEps));
    attn.q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, c.qkvBias));
    attn.k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    attn.v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    attn.o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, c.outputBias));
    if (c.qkNorm) {  // Qwen3-MoE: per head
      attn.qNorm = addModule(root, p + "self_attn.q_norm", RmsNorm(hd, c.rmsNormEps));
      attn.kNorm = addModule(root, p + "self_attn.k_norm", RmsNorm(hd, c.rmsNormEps));
    } else if (c.modelType == "olmoe") {  // OLMoE: over the whole projection, as OLMo 2
      attn.qNorm = addModule(root, p + "self_attn.q_norm", RmsNorm(c.numHeads * hd, c.rmsNormEps));
      attn.kNorm =
          addModule(root, p + "self_attn.k_norm", RmsNorm(c.numKvHeads * hd, c.rmsNormEps));
      attn.wholeNorms = true;
    }
    attn.heads = c.numHeads;
    attn.kvHeads = c.numKvHeads;
    postNorm = addModule(root, p + "post_attention_layernorm", RmsNorm(C, c.rmsNormEps));
    const bool mixtral = c.modelType == "mixtral";
    if (!sparse) {
      const int64_t I = c.intermediateSize;
      mlp.gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, false));
      mlp.up = addModule(root, p + "mlp.up_proj", Linear(C, I, false));
      mlp.down = addModule(root, p + "mlp.down_proj", Linear(I, C, false));
      return;
    }
    const std::string block = p + (mixtral ? "block_sparse_moe." : "mlp.");
    const int64_t I = m.expertIntermediate;
    moe.gate = addModule(root, block + "gate", Linear(C, m.numExperts, false));
    moe.topK = m.topK;
    moe.normTopK = m.normTopK;
    for (int e = 0; e < m.numExperts; ++e) {
      const std::string x = block + "experts." + std::to_string(e) + ".";
      GatedMlp& g = moe.experts.emplace_back();
      g.gate = addModule(root, x + (mixtral ? "w1" : "gate_proj"), Linear(C, I, false));
      g.up = addModule(root, x + (mixtral ? "w3" : "up_proj"), Linear(C, I, false));
      g.down = addModule(root, x + (mixtral ? "w2" : "down_proj"), Linear(I, C, false));
    }
    if (const int64_t S = m.sharedExpertIntermediate; S > 0) {  // Qwen2-MoE
      GatedMlp& g = moe.sharedExpert;
      g.gate = addModule(root, block + "shared_expert.gate_proj", Linear(C, S, false));
      g.up = addModule(root, block + "shared_expert.up_proj", Linear(C, S, false));
      g.down = addModule(root, block + "shared_expert.down_proj", Linear(S, C, false));
      moe.sharedExpertGate = addModule(root, block + "shared_expert_gate", Linear(C, 1, false));
    }
  }
};

class MixtralFamily final : public DecoderFamily {
 public:
  explicit MixtralFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_m(MixtralConfig::fromReader(m_config)),
        m_c(m_m.base),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(rotaryOptions(m_c.ropeScaling, m_c.rotaryDim(), m_c.ropeTheta, m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_m,
                            m_m.sparseLayers[static_cast<std::size_t>(l)]);
    m_norm = addModule(root, "norm", RmsNorm(m_c.hiddenSize, m_c.rmsNormEps));
    WeightRules rules;
    rules.family = m_c.modelType == "mixtral"     ? "Mixtral model"
                   : m_c.modelType == "olmoe"     ? "OLMoE model"
                   : m_c.modelType == "qwen2_moe" ? "Qwen2-MoE model"
                                                  : "Qwen3-MoE model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a MixtralModel: no language-model head, no predictions
    load(root, rules, m_m.describe());
  }

  bool supportsValueNorms() const override { return true; }
  int routerTopK() const override { return m_m.topK; }
  ModelInfo info() const override {
    ModelInfo i =
        decoderInfo(m_c.modelType, m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                    rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
    if (m_c.slidingFromLayer == 0) i.slidingWindow = m_c.slidingWindow;
    return i;
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, q, k, v, repeated k/v, merged heads; the router's logits and
    // probabilities; an expert's gate, up and product (its rows only) and the summed outputs;
    // the shared expert's, where there is one, as wide as its own width.
    const uint64_t attention = static_cast<uint64_t>(m_c.numHeads) * m_c.headDim;
    const uint64_t width = std::max({static_cast<uint64_t>(m_m.expertIntermediate),
                                     static_cast<uint64_t>(m_c.intermediateSize),
                                     static_cast<uint64_t>(m_m.sharedExpertIntermediate)});
    return 4 * (5ull * m_c.hiddenSize + 4 * attention + 2ull * m_m.numExperts + 3 * width);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    MixtralLayer& L = m_layers[static_cast<std::size_t>(index)];
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
    h = L.sparse ? L.moe.forward(h, m_act, rec, s, &s, ctx.routing)
                 : L.mlp.forward(std::move(h), m_act, rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden);
  }

 private:
  MixtralConfig m_m;
  const LlamaConfig& m_c;  // m_m.base
  Activation m_act;
  RotaryCache m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<MixtralLayer> m_layers;
  RmsNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openMixtralFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<MixtralFamily>(folder), name);
}

}  // namespace attnscope
