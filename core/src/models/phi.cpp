// SPDX-License-Identifier: GPL-3.0-or-later
// Phi-1, Phi-1.5 and Phi-2 (Hugging Face's PhiForCausalLM, model_type phi): one LayerNorm per
// block read by both sublayers, the parallel residual
//   out = x + dense(attn(ln(x))) + fc2(gelu_new(fc1(ln(x)))),
// separate biased q/k/v projections, rotary on the first int(head_dim · partial_rotary_factor)
// dimensions of each head (Phi-2: 32 of 80), an optional LayerNorm of each head's q and k over
// head_dim before the rotation (qk_layernorm), final_layernorm, and an lm_head with a bias.
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/phi_config.h"
#include "models/transformer_model.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// layers.{i}: input_layernorm, self_attn.{q_proj, k_proj, v_proj, dense} (all with biases),
/// self_attn.{q_layernorm, k_layernorm} (qk_layernorm only), mlp.{fc1, fc2}.
struct PhiLayer {
  LayerNorm inputNorm{nullptr}, qNorm{nullptr}, kNorm{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, dense{nullptr}, fc1{nullptr}, fc2{nullptr};

  PhiLayer(torch::nn::Module& root, const std::string& p, const PhiConfig& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim(), I = c.intermediateSize;
    inputNorm = addModule(root, p + "input_layernorm", LayerNorm(C, c.layerNormEps));
    q = addModule(root, p + "self_attn.q_proj", Linear(C, c.numHeads * hd, true));
    k = addModule(root, p + "self_attn.k_proj", Linear(C, c.numKvHeads * hd, true));
    v = addModule(root, p + "self_attn.v_proj", Linear(C, c.numKvHeads * hd, true));
    dense = addModule(root, p + "self_attn.dense", Linear(c.numHeads * hd, C, true));
    if (c.qkLayernorm) {  // one LayerNorm over head_dim, shared by the heads
      qNorm = addModule(root, p + "self_attn.q_layernorm", LayerNorm(hd, c.layerNormEps));
      kNorm = addModule(root, p + "self_attn.k_layernorm", LayerNorm(hd, c.layerNormEps));
    }
    fc1 = addModule(root, p + "mlp.fc1", Linear(C, I, true));
    fc2 = addModule(root, p + "mlp.fc2", Linear(I, C, true));
  }
};

class PhiFamily final : public DecoderFamily {
 public:
  explicit PhiFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(PhiConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(rotaryOptions(m_c.ropeScaling, m_c.rotaryDim(), m_c.ropeTheta, m_c.maxPositions)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "final_layernorm", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "Phi model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};
    if (m_c.tieWordEmbeddings) {
      // The weight is the embedding's; lm_head keeps its own bias.
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
      if (hasTensor("lm_head.bias", "model."))
        m_headBias = addParameter(root, "lm_head.bias", torch::empty({m_c.vocabSize}));
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, true));
    }  // else a PhiModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    return decoderInfo("phi", m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                       rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    PhiLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads, Hkv = m_c.numKvHeads, hd = m_c.headDim();
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    const int normStep =
        rec.record("input_layernorm", "self.input_layernorm(x)", "layernorm", h, {xStep});
    // [B, T, heads·hd] -> [B, heads, T, hd]
    const auto project = [&](Linear& proj, int64_t heads, const std::string& n, int* step) {
      const torch::Tensor p = proj(h);
      const int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {normStep});
      torch::Tensor t = splitHeads(p, heads);
      *step = rec.record(n, n + ".view(B, T, -1, hd).transpose(1, 2)", "permute", t, {s});
      return t;
    };
    QkvHeads r;
    r.q = project(L.q, H, "q", &r.qStep);
    r.k = project(L.k, Hkv, "k", &r.kStep);
    r.v = project(L.v, Hkv, "v", &r.vStep);
    if (m_c.qkLayernorm) {
      r.q = L.qNorm(r.q);
      r.qStep = rec.record("q_layernorm", "self.q_layernorm(q)", "layernorm", r.q, {r.qStep});
      r.k = L.kNorm(r.k);
      r.kStep = rec.record("k_layernorm", "self.k_layernorm(k)", "layernorm", r.k, {r.kStep});
    }
    const auto& [cos, sin] = m_rotary.cosSin(ctx.positions);
    r = rotateAndRepeat(std::move(r), H, cos, sin, m_rotary.rotary().describe(hd), rec);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.dense(t); }, "self.dense(merged)",
                   [&] { return outputWeightByHead(L.dense->weight, H); }};
    tail.valueNorms = ctx.valueNorms;  // v has one head per query head here
    int attnStep = -1;
    const torch::Tensor attnOut = attentionTail(std::move(r), sdpa, tail, rec, &attnStep);
    // The MLP reads the same normed input as the attention.
    const MlpProjection fc1{[&](const torch::Tensor& t) { return L.fc1(t); }, "self.fc1(x)"};
    const MlpProjection fc2{[&](const torch::Tensor& t) { return L.fc2(t); }, "self.fc2(h)"};
    return parallelMlp(std::move(h), attnOut, x, normStep, attnStep, xStep, fc1, m_act, fc2, rec);
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden, m_headBias);
  }

 private:
  PhiConfig m_c;
  Activation m_act;
  RotaryCache m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<PhiLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
  torch::Tensor m_headBias;  // a tied head's lm_head.bias
};

}  // namespace

std::shared_ptr<Model> openPhiFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<PhiFamily>(folder), name);
}

}  // namespace attnscope
