// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-Neo (Hugging Face's GPTNeoModel / GPTNeoForCausalLM, model_type gpt_neo): GPT-2's pre-norm
// block with learned absolute positions, separate q/k/v projections (no biases) and an out_proj
// with one, scores that are NOT divided by √head_dim, and layers that alternate (attention_types)
// between global causal attention and local attention over the window_size most recent keys.
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/gpt_neo_config.h"
#include "models/transformer_model.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// h.{i}: ln_1, attn.attention.{q_proj, k_proj, v_proj, out_proj}, ln_2, mlp.{c_fc, c_proj}.
struct GptNeoLayer {
  LayerNorm ln1{nullptr}, ln2{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, out{nullptr}, fc{nullptr}, proj{nullptr};

  GptNeoLayer(torch::nn::Module& root, const std::string& p, const GptNeoConfig& c) {
    const int64_t C = c.hiddenSize, I = c.mlpSize();
    ln1 = addModule(root, p + "ln_1", LayerNorm(C, c.layerNormEps));
    q = addModule(root, p + "attn.attention.q_proj", Linear(C, C, false));
    k = addModule(root, p + "attn.attention.k_proj", Linear(C, C, false));
    v = addModule(root, p + "attn.attention.v_proj", Linear(C, C, false));
    out = addModule(root, p + "attn.attention.out_proj", Linear(C, C, true));
    ln2 = addModule(root, p + "ln_2", LayerNorm(C, c.layerNormEps));
    fc = addModule(root, p + "mlp.c_fc", Linear(C, I));
    proj = addModule(root, p + "mlp.c_proj", Linear(I, C));
  }
};

class GptNeoFamily final : public DecoderFamily {
 public:
  explicit GptNeoFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(GptNeoConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": activation_function")) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "wte", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    m_positions = addModule(root, "wpe", EmbeddingTable(m_c.maxPositions, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "h." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "ln_f", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "GPT-Neo";
    rules.prefixes = {"transformer."};
    // Buffers older checkpoints saved: the causal (or local) mask and its fill value.
    rules.ignoredSuffixes = {".attn.attention.bias", ".attn.attention.masked_bias"};
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"wte.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "transformer.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a GPTNeoModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    ModelInfo i = decoderInfo("gpt_neo", m_c.numLayers, m_c.numHeads, m_c.numHeads, m_c.hiddenSize,
                              m_c.maxPositions);
    bool allLocal = true;
    for (bool l : m_c.localLayers) allLocal = allLocal && l;
    if (allLocal) i.slidingWindow = m_c.windowSize;  // one mask for the whole run
    return i;
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return embedIdsAt(ids, 0); }
  torch::Tensor embedIdsAt(const torch::Tensor& ids, int64_t start) override {
    // position_ids = cache_position: 0..T-1 whatever the padding.
    const torch::Tensor positions = torch::arange(start, start + ids.size(1), ids.options());
    return m_embed(ids) + m_positions(positions).unsqueeze(0);
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    GptNeoLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads;
    const bool local = m_c.localLayers[static_cast<std::size_t>(index)];
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.ln1(x);
    const int normStep = rec.record("ln_1", "self.ln_1(x)", "layernorm", h, {xStep});
    const auto project = [&](Linear& proj, const std::string& n, int* step) {
      const torch::Tensor p = proj(h);
      const int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {normStep});
      torch::Tensor t = splitHeads(p, H);
      *step = rec.record(n, "self._split_heads(" + n + ", H, hd)", "permute", t, {s});
      return t;
    };
    QkvHeads r;
    r.q = project(L.q, "q", &r.qStep);
    r.k = project(L.k, "k", &r.kStep);
    r.v = project(L.v, "v", &r.vStep);
    h = torch::Tensor();
    SdpaOptions sdpa;
    // Local layers: the window_size most recent keys (GPTNeoSelfAttention's bias ^ tril(bias,
    // -window_size)); global layers: the causal mask.
    sdpa.mask = local ? windowMask(ctx, m_c.windowSize) : ctx.mask;
    sdpa.scale = 1.0;  // GPT-Neo does not divide the scores by √head_dim
    sdpa.scaleText =
        local ? "1 (not scaled; local: window_size " + std::to_string(m_c.windowSize) + ")"
              : "1 (not scaled)";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.out(t); }, "self.out_proj(merged)",
                   [&] { return outputWeightByHead(L.out->weight, H); }};
    tail.mergeExpression = "self._merge_heads(values, H, hd)";
    tail.valueNorms = ctx.valueNorms;
    int s = -1;
    h = attentionTail(std::move(r), sdpa, tail, rec, &s);
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.ln2(residual);
    s = rec.record("ln_2", "self.ln_2(x)", "layernorm", h, {residualStep});
    const MlpProjection fc{[&](const torch::Tensor& t) { return L.fc(t); }, "self.c_fc(x)"};
    const MlpProjection proj{[&](const torch::Tensor& t) { return L.proj(t); }, "self.c_proj(h)"};
    h = feedForward(std::move(h), fc, m_act, proj, nullptr, rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden);
  }

 private:
  GptNeoConfig m_c;
  Activation m_act;
  EmbeddingTable m_embed{nullptr}, m_positions{nullptr};
  std::vector<GptNeoLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openGptNeoFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<GptNeoFamily>(folder), name);
}

}  // namespace attnscope
