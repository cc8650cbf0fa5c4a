// SPDX-License-Identifier: GPL-3.0-or-later
// OLMo 1 (Hugging Face's OlmoForCausalLM, model_type olmo: OLMo-1B-hf, OLMo-7B-hf,
// OLMo-1.7-7B-hf): Llama's pre-norm block, projections, rotary and SwiGLU MLP, with two quirks:
//  - the norms are non-parametric LayerNorms (OlmoLayerNorm: mean and variance, epsilon 1e-5,
//    no weight and no bias), so the checkpoint has no norm tensors at all;
//  - clip_qkv (OLMo 1.7): q, k and v clamped to [-clip, clip] right after their projections.
// The config is LlamaConfig's (olmo_config.cpp).
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/olmo_config.h"
#include "models/transformer_model.h"
#include "nn/attention_tail.h"
#include "nn/gated_mlp.h"
#include "nn/head_value_norms.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// layers.{i}: self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj. No norm parameters.
struct OlmoLayer {
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  GatedMlp mlp;

  OlmoLayer(torch::nn::Module& root, const std::string& p, const LlamaConfig& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim, I = c.intermediateSize;
    q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, c.qkvBias));
    k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, c.outputBias));
    mlp.gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, false));
    mlp.up = addModule(root, p + "mlp.up_proj", Linear(C, I, false));
    mlp.down = addModule(root, p + "mlp.down_proj", Linear(I, C, false));
  }
};

/// OlmoLayerNorm: x normalised over its last axis, no gain, no bias. x: [..., C] -> [..., C]
torch::Tensor olmoLayerNorm(const torch::Tensor& x) {
  return torch::layer_norm(x, {x.size(-1)}, {}, {}, OlmoConfig::kLayerNormEps);
}

class OlmoFamily final : public DecoderFamily {
 public:
  explicit OlmoFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(OlmoConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.base.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(rotaryOptions(m_c.base.ropeScaling, m_c.base.rotaryDim(), m_c.base.ropeTheta,
                               m_c.base.maxPositions)) {
    const LlamaConfig& c = m_c.base;
    torch::nn::Module& root = rootForVocabulary(c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(c.vocabSize, c.hiddenSize));
    for (int l = 0; l < c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", c);
    WeightRules rules;
    rules.family = "OLMo model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};
    if (c.tieWordEmbeddings) {
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(c.hiddenSize, c.vocabSize, false));
    }  // else an OlmoModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    const LlamaConfig& c = m_c.base;
    return decoderInfo("olmo", c.numLayers, c.numHeads, c.numKvHeads, c.hiddenSize,
                       rotaryMaxPositions(c.ropeScaling, c.maxPositions));
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, q, k, v, rotated q and k, repeated k/v, merged heads; gate, up and
    // their product.
    const LlamaConfig& c = m_c.base;
    const uint64_t attention = static_cast<uint64_t>(c.numHeads) * c.headDim;
    return 4 * (4ull * c.hiddenSize + 6 * attention + 3ull * c.intermediateSize);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    OlmoLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = olmoLayerNorm(x);
    int s = rec.record("input_layernorm", "self.input_layernorm(x)  # no weight, no bias",
                       "layernorm", h, {xStep});
    h = attention(L, h, s, ctx, &s);
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = olmoLayerNorm(residual);
    s = rec.record("post_attention_layernorm",
                   "self.post_attention_layernorm(x)  # no weight, no bias", "layernorm", h,
                   {residualStep});
    h = L.mlp.forward(std::move(h), m_act, rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return olmoLayerNorm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    if (m_head) return m_head(hidden);
    if (m_c.base.tieWordEmbeddings) return linearForward(hidden, m_embed->weight, {});
    return {};
  }

 private:
  /// x: [B, T, C] normed (trace step xStep) -> the o_proj output [B, T, C].
  torch::Tensor attention(OlmoLayer& L, const torch::Tensor& x, int xStep, LayerContext& ctx,
                          int* outStep) {
    TraceRecorder& rec = *ctx.rec;
    const LlamaConfig& c = m_c.base;
    const int64_t H = c.numHeads, Hkv = c.numKvHeads;
    const double clip = m_c.clipQkv;
    const std::string clipText = "clamp_(-clip_qkv, clip_qkv)";
    // [B, T, heads·hd] -> [B, heads, T, hd], clamped first with clip_qkv.
    const auto project = [&](Linear& proj, int64_t heads, const std::string& n, int* step) {
      torch::Tensor p = proj(x);
      int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {xStep});
      if (clip > 0) {
        p = p.clamp(-clip, clip);
        s = rec.record(n + "_clip", n + "." + clipText, "clamp", p, {s});
      }
      torch::Tensor t = splitHeads(p, heads);
      *step = rec.record(n, n + ".view(B, T, -1, hd).transpose(1, 2)", "permute", t, {s});
      return t;
    };
    QkvHeads r;
    r.q = project(L.q, H, "q", &r.qStep);
    r.k = project(L.k, Hkv, "k", &r.kStep);
    r.v = project(L.v, Hkv, "v", &r.vStep);
    const auto& [cos, sin] = m_rotary.cosSin(ctx.positions);
    r = rotateAndRepeat(std::move(r), H, cos, sin, m_rotary.rotary().describe(c.headDim), rec);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.o(t); }, "self.o_proj(merged)",
                   [&] { return outputWeightByHead(L.o->weight, H); }};
    tail.valueNorms = ctx.valueNorms;  // v has one head per query head here
    return attentionTail(std::move(r), sdpa, tail, rec, outStep);
  }

  OlmoConfig m_c;
  Activation m_act;
  RotaryCache m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<OlmoLayer> m_layers;
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openOlmoFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<OlmoFamily>(folder), name);
}

}  // namespace attnscope
