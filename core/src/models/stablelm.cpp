// SPDX-License-Identifier: GPL-3.0-or-later
// StableLM (Hugging Face's StableLmForCausalLM, model_type stablelm: StableLM-3B-4E1T, StableLM 2,
// StableLM Zephyr): Llama's projections and SwiGLU MLP with LayerNorms (weight and bias) instead
// of RMSNorms, rotary on the first int(partial_rotary_factor · head_dim) dimensions (a quarter by
// default), q/k/v biases with use_qkv_bias (StableLM 2 1.6B), and two options:
//  - qk_layernorm (StableLM 2 12B): each head's q and k normalised by its own LayerNorm over
//    head_dim (no bias), self_attn.q_layernorm.norms.{h} for the H query heads and
//    self_attn.k_layernorm.norms.{h} for the Hkv key heads, before the rotation;
//  - use_parallel_residual (StableLM 2 12B): x + attn(ln(x)) + mlp(ln(x)), one LayerNorm read by
//    both sublayers and no post_attention_layernorm; otherwise Llama's sequential block.
#include <cmath>
#include <utility>
#include <vector>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/phi_config.h"
#include "models/transformer_model.h"
#include "nn/attention_tail.h"
#include "nn/compute_weight.h"
#include "nn/gated_mlp.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// StableLmLayerNormPerHead: head h of x [B, heads, T, hd] through its own LayerNorm over hd, with
/// a gain and no bias (`{path}.norms.{h}.weight`).
struct StableLmHeadNorms {
  std::vector<torch::Tensor> weights;  // heads × [hd]
  double eps = 1e-5;

  StableLmHeadNorms() = default;
  StableLmHeadNorms(torch::nn::Module& root, const std::string& path, int64_t heads, int64_t hd,
                    double epsilon)
      : eps(epsilon) {
    for (int64_t h = 0; h < heads; ++h)
      weights.push_back(
          addParameter(root, path + ".norms." + std::to_string(h) + ".weight", torch::empty({hd})));
  }

  torch::Tensor operator()(const torch::Tensor& x) const {
    std::vector<torch::Tensor> gains;
    for (const torch::Tensor& w : weights) gains.push_back(computeWeight(w));
    const torch::Tensor g = torch::stack(gains).unsqueeze(1);  // [heads, 1, hd]
    return torch::layer_norm(x, {x.size(-1)}, {}, {}, eps) * g;
  }
};

/// layers.{i}: input_layernorm, self_attn.{q,k,v,o}_proj, self_attn.{q,k}_layernorm.norms.{h}
/// (qk_layernorm), post_attention_layernorm (not with use_parallel_residual),
/// mlp.{gate,up,down}_proj.
struct StableLmLayer {
  LayerNorm inputNorm{nullptr}, postNorm{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  StableLmHeadNorms qNorm, kNorm;
  GatedMlp mlp;

  StableLmLayer(torch::nn::Module& root, const std::string& p, const StableLmConfig& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim(), I = c.intermediateSize;
    const double eps = c.layerNormEps;
    inputNorm = addModule(root, p + "input_layernorm", LayerNorm(C, eps));
    q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, c.qkvBias));
    k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, c.qkvBias));
    o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, false));
    if (c.qkLayernorm) {
      qNorm = StableLmHeadNorms(root, p + "self_attn.q_layernorm", c.numHeads, hd, eps);
      kNorm = StableLmHeadNorms(root, p + "self_attn.k_layernorm", c.numKvHeads, hd, eps);
    }
    if (!c.parallelResidual)
      postNorm = addModule(root, p + "post_attention_layernorm", LayerNorm(C, eps));
    mlp.gate = addModule(root, p + "mlp.gate_proj", Linear(C, I, false));
    mlp.up = addModule(root, p + "mlp.up_proj", Linear(C, I, false));
    mlp.down = addModule(root, p + "mlp.down_proj", Linear(I, C, false));
  }
};

class StableLmFamily final : public DecoderFamily {
 public:
  explicit StableLmFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(StableLmConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(rotaryOptions(m_c.ropeScaling, m_c.rotaryDim(), m_c.ropeTheta, m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "norm", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "StableLM model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a StableLmModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    return decoderInfo("stablelm", m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                       rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, q, k, v, rotated q and k, repeated k/v, merged heads; gate, up and
    // their product.
    const uint64_t attention = static_cast<uint64_t>(m_c.numHeads) * m_c.headDim();
    return 4 * (4ull * m_c.hiddenSize + 6 * attention + 3ull * m_c.intermediateSize);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    StableLmLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    int s = rec.record("input_layernorm", "self.input_layernorm(x)", "layernorm", h, {xStep});
    int attnStep = -1;
    torch::Tensor attnOut = attention(L, h, s, ctx, &attnStep);
    if (m_c.parallelResidual) {
      // Both sublayers read the same normed input: x + attn(ln(x)) + mlp(ln(x)).
      h = L.mlp.forward(std::move(h), m_act, rec, s, &s);
      h.add_(attnOut).add_(x);  // x belongs to the caller's loop
      rec.record("residual", "x + attn_out + mlp_out", "add", h, {xStep, attnStep, s});
      return h;
    }
    const torch::Tensor residual = attnOut.add_(x);
    const int residualStep =
        rec.record("residual_1", "x + attn_out", "add", residual, {xStep, attnStep});
    h = L.postNorm(residual);
    s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)", "layernorm", h,
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
  /// x: [B, T, C] normed (trace step xStep) -> the o_proj output [B, T, C].
  torch::Tensor attention(StableLmLayer& L, const torch::Tensor& x, int xStep, LayerContext& ctx,
                          int* outStep) {
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads, Hkv = m_c.numKvHeads, hd = m_c.headDim();
    // [B, T, heads·hd] -> [B, heads, T, hd]
    const auto project = [&](Linear& proj, int64_t heads, const std::string& n, int* step) {
      const torch::Tensor p = proj(x);
      const int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {xStep});
      torch::Tensor t = splitHeads(p, heads);
      *step = rec.record(n, n + ".view(B, T, -1, hd).transpose(1, 2)", "permute", t, {s});
      return t;
    };
    QkvHeads r;
    r.q = project(L.q, H, "q", &r.qStep);
    r.k = project(L.k, Hkv, "k", &r.kStep);
    r.v = project(L.v, Hkv, "v", &r.vStep);
    if (m_c.qkLayernorm) {  // each head its own LayerNorm over head_dim
      r.q = L.qNorm(r.q);
      r.qStep =
          rec.record("q_layernorm", "self.q_layernorm(q)  # per head", "layernorm", r.q, {r.qStep});
      r.k = L.kNorm(r.k);
      r.kStep =
          rec.record("k_layernorm", "self.k_layernorm(k)  # per head", "layernorm", r.k, {r.kStep});
    }
    const auto& [cos, sin] = m_rotary.cosSin(ctx.positions);
    r = rotateAndRepeat(std::move(r), H, cos, sin, m_rotary.rotary().describe(hd), rec);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "1 / math.sqrt(head_dim)";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.o(t); }, "self.o_proj(merged)",
                   [&] { return outputWeightByHead(L.o->weight, H); }};
    tail.valueNorms = ctx.valueNorms;  // v has one head per query head here
    return attentionTail(std::move(r), sdpa, tail, rec, outStep);
  }

  StableLmConfig m_c;
  Activation m_act;
  RotaryCache m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<StableLmLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openStableLmFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<StableLmFamily>(folder), name);
}

}  // namespace attnscope
