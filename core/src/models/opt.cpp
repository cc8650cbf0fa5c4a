// SPDX-License-Identifier: GPL-3.0-or-later
// OPT (Hugging Face's OPTModel / OPTForCausalLM, model_type opt): learned absolute positions
// looked up at position + 2 (OPTLearnedPositionalEmbedding's offset), biased q/k/v/out
// projections with q scaled by head_dim^-0.5 as it leaves q_proj, a ReLU fc1/fc2 MLP, LayerNorms
// before each sublayer (do_layer_norm_before, and a final_layer_norm) or after each residual
// (OPT-350m), and word embeddings of another width (word_embed_proj_dim) mapped in and out by
// project_in / project_out. The language-model head is tied to the word embeddings by default.
#include <cmath>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/opt_config.h"
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

/// decoder.layers.{i}: self_attn.{q_proj, k_proj, v_proj, out_proj}, self_attn_layer_norm, fc1,
/// fc2, final_layer_norm.
struct OptLayer {
  LayerNorm attnNorm{nullptr}, mlpNorm{nullptr};
  Linear q{nullptr}, k{nullptr}, v{nullptr}, out{nullptr}, fc1{nullptr}, fc2{nullptr};

  OptLayer(torch::nn::Module& root, const std::string& p, const OptConfig& c) {
    const int64_t C = c.hiddenSize, I = c.ffnDim;
    const bool b = c.enableBias;
    q = addModule(root, p + "self_attn.q_proj", Linear(C, C, b));
    k = addModule(root, p + "self_attn.k_proj", Linear(C, C, b));
    v = addModule(root, p + "self_attn.v_proj", Linear(C, C, b));
    out = addModule(root, p + "self_attn.out_proj", Linear(C, C, b));
    attnNorm = addModule(root, p + "self_attn_layer_norm",
                         LayerNorm(C, OptConfig::kLayerNormEps, c.layerNormAffine));
    fc1 = addModule(root, p + "fc1", Linear(C, I, b));
    fc2 = addModule(root, p + "fc2", Linear(I, C, b));
    mlpNorm = addModule(root, p + "final_layer_norm",
                        LayerNorm(C, OptConfig::kLayerNormEps, c.layerNormAffine));
  }
};

class OptFamily final : public DecoderFamily {
 public:
  explicit OptFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(OptConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": activation_function")) {
    const int64_t C = m_c.hiddenSize, P = m_c.wordEmbedProjDim;
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "decoder.embed_tokens", EmbeddingTable(m_c.vocabSize, P));
    m_positions = addModule(root, "decoder.embed_positions",
                            EmbeddingTable(m_c.maxPositions + OptConfig::kPositionOffset, C));
    if (m_c.projects()) {
      m_projectIn = addModule(root, "decoder.project_in", Linear(P, C, false));
      m_projectOut = addModule(root, "decoder.project_out", Linear(C, P, false));
    }
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "decoder.layers." + std::to_string(l) + ".", m_c);
    if (m_c.finalNorm())
      m_norm = addModule(root, "decoder.final_layer_norm",
                         LayerNorm(C, OptConfig::kLayerNormEps, m_c.layerNormAffine));
    WeightRules rules;
    rules.family = "OPT";
    rules.prefixes = {"model."};  // OPTForCausalLM; OPTModel's files have no prefix
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"decoder.embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(P, m_c.vocabSize, false));
    }  // else an OPTModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    return decoderInfo("opt", m_c.numLayers, m_c.numHeads, m_c.numHeads, m_c.hiddenSize,
                       m_c.maxPositions);
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, q, k, v, merged heads, output; fc1's output and its activation.
    return 4 * (7ull * m_c.hiddenSize + 2ull * m_c.ffnDim);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return embedIdsAt(ids, 0); }

  torch::Tensor embedIdsAt(const torch::Tensor& ids, int64_t start) override {
    // Right-padded batches: every item's real tokens sit at 0..n-1, where transformers'
    // cumsum(attention_mask) - 1 puts them too.
    const torch::Tensor positions =
        torch::arange(start, start + ids.size(1), ids.options()) + OptConfig::kPositionOffset;
    torch::Tensor x = m_embed(ids);
    if (m_projectIn) x = m_projectIn(x);
    return x + m_positions(positions).unsqueeze(0);
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    OptLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const bool pre = m_c.doLayerNormBefore;
    const int xStep = rec.record("x", "x", "input", x);
    int s = xStep;
    torch::Tensor h = x;
    if (pre) {
      h = L.attnNorm(x);
      s = rec.record("self_attn_layer_norm", "self.self_attn_layer_norm(x)", "layernorm", h,
                     {xStep});
    }
    h = attention(L, h, s, ctx, &s);
    h.add_(x);  // x belongs to the caller's loop
    s = rec.record("residual_1", "x + attn_out", "add", h, {xStep, s});
    if (!pre) {
      h = L.attnNorm(h);
      s = rec.record("self_attn_layer_norm", "self.self_attn_layer_norm(x)", "layernorm", h, {s});
    }
    const torch::Tensor residual = h;
    const int residualStep = s;
    if (pre) {
      h = L.mlpNorm(residual);
      s = rec.record("final_layer_norm", "self.final_layer_norm(x)", "layernorm", h, {s});
    }
    const MlpProjection fc1{[&](const torch::Tensor& t) { return L.fc1(t); }, "self.fc1(x)"};
    const MlpProjection fc2{[&](const torch::Tensor& t) { return L.fc2(t); }, "self.fc2(h)"};
    h = feedForward(std::move(h), fc1, m_act, fc2, nullptr, rec, s, &s);
    h.add_(residual);
    s = rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    if (!pre) {
      h = L.mlpNorm(h);
      rec.record("final_layer_norm", "self.final_layer_norm(x)", "layernorm", h, {s});
    }
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm ? m_norm(x) : x; }
  /// project_out (when the word embeddings have another width), then the head.
  torch::Tensor logits(const torch::Tensor& hidden) override {
    if (!m_head && !m_c.tieWordEmbeddings) return {};
    const torch::Tensor h = m_projectOut ? m_projectOut(hidden) : hidden;
    if (m_head) return m_head(h);
    return linearForward(h, m_embed->weight, {});
  }

 private:
  /// x: [B, T, C] (trace step xStep) -> the out_proj output [B, T, C].
  torch::Tensor attention(OptLayer& L, const torch::Tensor& x, int xStep, LayerContext& ctx,
                          int* outStep) {
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads, hd = m_c.headDim();
    const double scaling = 1.0 / std::sqrt(static_cast<double>(hd));
    QkvHeads r;
    {
      // OPTAttention scales q as it leaves q_proj (its bias too), and the scores by 1.
      torch::Tensor q = L.q(x);
      const int s = rec.record("q_proj", "self.q_proj(x)", "linear", q, {xStep});
      q.mul_(scaling);
      const int scaled =
          rec.record("q_scaled", "q * self.scaling (head_dim**-0.5)", "scale", q, {s});
      r.q = splitHeads(q, H);
      r.qStep = rec.record("q", "q.view(B, T, H, hd).transpose(1, 2)", "permute", r.q, {scaled});
    }
    const auto project = [&](Linear& proj, const std::string& n, int* step) {
      const torch::Tensor p = proj(x);
      const int s = rec.record(n + "_proj", "self." + n + "_proj(x)", "linear", p, {xStep});
      torch::Tensor t = splitHeads(p, H);
      *step = rec.record(n, n + ".view(B, T, H, hd).transpose(1, 2)", "permute", t, {s});
      return t;
    };
    r.k = project(L.k, "k", &r.kStep);
    r.v = project(L.v, "v", &r.vStep);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0;
    sdpa.scaleText = "1.0 (q is scaled)";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.out(t); }, "self.out_proj(merged)",
                   [&] { return outputWeightByHead(L.out->weight, H); }};
    tail.valueNorms = ctx.valueNorms;
    return attentionTail(std::move(r), sdpa, tail, rec, outStep);
  }

  OptConfig m_c;
  Activation m_act;
  EmbeddingTable m_embed{nullptr}, m_positions{nullptr};
  Linear m_projectIn{nullptr}, m_projectOut{nullptr};
  std::vector<OptLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openOptFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<OptFamily>(folder), name);
}

}  // namespace attnscope
