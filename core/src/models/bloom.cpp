// SPDX-License-Identifier: GPL-3.0-or-later
// Bloom (Hugging Face's BloomModel / BloomForCausalLM): the bloom family. No position embedding:
// ALiBi adds slope_h · key position to the scores. The word embeddings are layer-normed, each
// block is pre-LayerNorm with a fused per-head query_key_value, and the LM head is tied.
#include <algorithm>
#include <cmath>
#include <utility>

#include "models/bloom_config.h"
#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/transformer_model.h"
#include "nn/alibi.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// h.{i}: input_layernorm, self_attention.{query_key_value, dense}, post_attention_layernorm,
/// mlp.{dense_h_to_4h, dense_4h_to_h}.
struct BloomLayer {
  LayerNorm inputNorm{nullptr}, postNorm{nullptr};
  Linear qkv{nullptr}, dense{nullptr}, up{nullptr}, down{nullptr};

  BloomLayer(torch::nn::Module& root, const std::string& p, const BloomConfig& c) {
    const int64_t C = c.hiddenSize;
    inputNorm = addModule(root, p + "input_layernorm", LayerNorm(C, c.layerNormEps));
    qkv = addModule(root, p + "self_attention.query_key_value", Linear(C, 3 * C));
    dense = addModule(root, p + "self_attention.dense", Linear(C, C));
    postNorm = addModule(root, p + "post_attention_layernorm", LayerNorm(C, c.layerNormEps));
    up = addModule(root, p + "mlp.dense_h_to_4h", Linear(C, 4 * C));
    down = addModule(root, p + "mlp.dense_4h_to_h", Linear(4 * C, C));
  }
};

class BloomFamily final : public DecoderFamily {
 public:
  explicit BloomFamily(FolderParts parts)
      : DecoderFamily(std::move(parts)),
        m_c(BloomConfig::fromReader(m_config)),
        m_slopes(alibiSlopes(m_c.numHeads)) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "word_embeddings", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    m_embedNorm =
        addModule(root, "word_embeddings_layernorm", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "h." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "ln_f", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "Bloom";
    rules.prefixes = {"transformer."};
    rules.tied = {{"word_embeddings.weight", "lm_head.weight"}};  // BloomForCausalLM ties them
    rules.ignoredNames = {"lm_head.weight"};
    load(root, rules, m_c.describe());
  }

  /// Value-weighted norms: its layer writes them from the fused projection's values and dense.
  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    // ALiBi has no trained context length: no limit but RunLimits::maxTokens.
    return decoderInfo("bloom", m_c.numLayers, m_c.numHeads, m_c.numHeads, m_c.hiddenSize, 0);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embedNorm(m_embed(ids)); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    BloomLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    const int normStep =
        rec.record("input_layernorm", "self.input_layernorm(x)", "layernorm", h, {xStep});
    // apply_residual_connection_post_layernorm: the residual branch starts from the normed input.
    const torch::Tensor skip = m_c.residualPostLayernorm ? h : x;
    const int skipStep = m_c.residualPostLayernorm ? normStep : xStep;
    QkvHeads heads;  // views of qkv, which they keep alive until the attention has read them
    {
      const torch::Tensor qkv = L.qkv(h);  // [B, T, 3C], per head [q_h k_h v_h]
      heads =
          splitFusedQkv(qkv, QkvLayout::InterleavedPerHead, m_c.numHeads, rec,
                        rec.record("qkv", "self.query_key_value(x)", "linear", qkv, {normStep}));
    }
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(m_c.headDim()));
    sdpa.scaleText = "inv_norm_factor";
    // [B, H, 1, Tk]: slope_h · key position, over each item's real keys.
    // Over every key: with a key/value cache (generation) more than x's new positions.
    const int64_t keys = std::max<int64_t>(
        x.size(1), *std::max_element(ctx.keyLengths->begin(), ctx.keyLengths->end()));
    sdpa.bias = alibiBias(m_slopes, *ctx.keyLengths, keys).to(x.device());
    sdpa.biasText = "alibi";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.dense(t); }, "self.dense(merged)",
                   [&] { return outputWeightByHead(L.dense->weight, m_c.numHeads); }};
    tail.mergeExpression = "_merge_heads(context)";
    tail.valueNorms = ctx.valueNorms;
    int s = -1;
    h = attentionTail(std::move(heads), sdpa, tail, rec, &s);
    const torch::Tensor attention = h.add_(skip);
    const int attentionStep =
        rec.record("residual_1", "attn_out + residual", "add", attention, {s, skipStep});
    h = L.postNorm(attention);
    const int postStep = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)",
                                    "layernorm", h, {attentionStep});
    const torch::Tensor skip2 = m_c.residualPostLayernorm ? h : attention;
    const MlpProjection up{[&](const torch::Tensor& t) { return L.up(t); },
                           "self.dense_h_to_4h(x)"};
    const MlpProjection down{[&](const torch::Tensor& t) { return L.down(t); },
                             "self.dense_4h_to_h(h)"};
    // bloom_gelu_forward is the tanh approximation of GELU.
    h = feedForward(std::move(h), up, Activation::GeluTanh, down, nullptr, rec, postStep, &s,
                    "mlp_gelu");
    h.add_(skip2);
    rec.record("residual_2", "mlp_out + residual", "add", h,
               {s, m_c.residualPostLayernorm ? postStep : attentionStep});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return linearForward(hidden, m_embed->weight, {});
  }

 private:
  BloomConfig m_c;
  torch::Tensor m_slopes;  // [H]
  EmbeddingTable m_embed{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_norm{nullptr};
  std::vector<BloomLayer> m_layers;
};

}  // namespace

std::shared_ptr<Model> openBloomFolder(const std::string& folder, const std::string& name) {
  return openBloomParts(FolderParts::read(folder), name);
}

std::shared_ptr<Model> openBloomParts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BloomFamily>(std::move(parts)), name);
}

}  // namespace attnscope
