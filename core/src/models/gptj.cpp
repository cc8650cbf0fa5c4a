// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-J (Hugging Face's GPTJModel / GPTJForCausalLM, model_type gptj): one LayerNorm per block
// read by both sublayers, the parallel residual
//   out = x + out_proj(attn(ln_1(x))) + fc_out(gelu_new(fc_in(ln_1(x)))),
// q/k/v/out projections without biases, rotary positions on the first rotary_dim dimensions of
// each head with GPT-J's own pairing (rotate_every_two: neighbours (2i, 2i + 1), not Llama's
// halves), ln_f, and an lm_head with a bias.
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/gptj_config.h"
#include "models/transformer_model.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// h.{i}: ln_1, attn.{q_proj, k_proj, v_proj, out_proj} (no biases), mlp.{fc_in, fc_out}.
struct GptjLayer {
  LayerNorm ln1{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, out{nullptr}, fcIn{nullptr}, fcOut{nullptr};

  GptjLayer(torch::nn::Module& root, const std::string& p, const GptjConfig& c) {
    const int64_t C = c.hiddenSize, I = c.mlpSize();
    ln1 = addModule(root, p + "ln_1", LayerNorm(C, c.layerNormEps));
    q = addModule(root, p + "attn.q_proj", Linear(C, C, false));
    k = addModule(root, p + "attn.k_proj", Linear(C, C, false));
    v = addModule(root, p + "attn.v_proj", Linear(C, C, false));
    out = addModule(root, p + "attn.out_proj", Linear(C, C, false));
    fcIn = addModule(root, p + "mlp.fc_in", Linear(C, I));
    fcOut = addModule(root, p + "mlp.fc_out", Linear(I, C));
  }
};

RotaryOptions gptjRotary(const GptjConfig& c) {
  RotaryOptions o;  // create_sinusoidal_positions: base 10000, no scaling
  o.rotaryDim = c.rotaryDims;
  o.theta = 10000.0;
  o.maxPositions = c.maxPositions;
  return o;
}

class GptjFamily final : public DecoderFamily {
 public:
  explicit GptjFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(GptjConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": activation_function")),
        m_rotary(gptjRotary(m_c)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "wte", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "h." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "ln_f", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "GPT-J";
    rules.prefixes = {"transformer."};
    // Buffers older checkpoints saved: the causal mask and the sinusoid table.
    rules.ignoredSuffixes = {".attn.bias", ".attn.masked_bias", ".attn.embed_positions"};
    if (m_c.tieWordEmbeddings) {
      // The weight is the embedding's; lm_head keeps its own bias.
      rules.tied = {{"wte.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
      if (hasTensor("lm_head.bias", "transformer."))
        m_headBias = addParameter(root, "lm_head.bias", torch::empty({m_c.vocabSize}));
    } else if (hasTensor("lm_head.weight", "transformer.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, true));
    }  // else a GPTJModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    return decoderInfo("gptj", m_c.numLayers, m_c.numHeads, m_c.numHeads, m_c.hiddenSize,
                       m_c.maxPositions);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    GptjLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads, hd = m_c.headDim();
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.ln1(x);
    const int normStep = rec.record("ln_1", "self.ln_1(x)", "layernorm", h, {xStep});
    // [B, T, C] -> [B, H, T, hd]
    const auto project = [&](Linear& proj, const std::string& n, int* step) {
      const torch::Tensor p = proj(h);
      const int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {normStep});
      torch::Tensor t = splitHeads(p, H);
      *step = rec.record(n, n + ".view(B, T, H, hd).transpose(1, 2)", "permute", t, {s});
      return t;
    };
    QkvHeads r;
    r.q = project(L.q, "q", &r.qStep);
    r.k = project(L.k, "k", &r.kStep);
    r.v = project(L.v, "v", &r.vStep);
    const auto& [cos, sin] = m_rotary.cosSin(ctx.positions);
    const std::string rope =
        "apply_rotary_pos_emb, rotate_every_two (" + m_rotary.rotary().describe(hd) + ")";
    r.q = RotaryEmbedding::applyInterleaved(r.q, cos, sin);
    r.qStep = rec.record("q_rot", rope, "rotary", r.q, {r.qStep});
    r.k = RotaryEmbedding::applyInterleaved(r.k, cos, sin);
    r.kStep = rec.record("k_rot", rope, "rotary", r.k, {r.kStep});
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "1 / self.scale_attn";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.out(t); }, "self.out_proj(merged)",
                   [&] { return outputWeightByHead(L.out->weight, H); }};
    tail.valueNorms = ctx.valueNorms;
    int attnStep = -1;
    const torch::Tensor attnOut = attentionTail(std::move(r), sdpa, tail, rec, &attnStep);
    // The MLP reads the same normed input as the attention.
    const MlpProjection fcIn{[&](const torch::Tensor& t) { return L.fcIn(t); }, "self.fc_in(x)"};
    const MlpProjection fcOut{[&](const torch::Tensor& t) { return L.fcOut(t); }, "self.fc_out(h)"};
    return parallelMlp(std::move(h), attnOut, x, normStep, attnStep, xStep, fcIn, m_act, fcOut,
                       rec);
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden, m_headBias);
  }

 private:
  GptjConfig m_c;
  Activation m_act;
  RotaryCache m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<GptjLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
  torch::Tensor m_headBias;  // a tied head's lm_head.bias
};

}  // namespace

std::shared_ptr<Model> openGptjFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<GptjFamily>(folder), name);
}

}  // namespace attnscope
