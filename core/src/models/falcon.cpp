// SPDX-License-Identifier: GPL-3.0-or-later
// Falcon (Hugging Face's FalconModel / FalconForCausalLM, model_type falcon): Falcon-7B, 40B, 180B,
// Falcon 2 and Falcon-RW. Pre-LayerNorm blocks with one fused query_key_value in one of three
// layouts (FalconQkvLayout: grouped [q … q k v] per key/value group in the new decoder
// architecture, [q_0 … q_{H-1} k v] with one shared key/value head for multi-query, per head
// [q_h k_h v_h] otherwise), and
//   parallel:   x + dense(attn(ln_attn(x))) + mlp(ln_mlp(x))   (ln_attn = ln_mlp = input_layernorm
//                                                               unless two norms)
//   sequential: h = x + dense(attn(input_layernorm(x))); h + mlp(post_attention_layernorm(h)),
// mlp = dense_4h_to_h(gelu(dense_h_to_4h(·))), biases on every linear layer or none (`bias`).
// Positions are rotary over the whole head (rotate_half), or ALiBi: Falcon adds the bias to q·kᵀ
// before the scaling, so the bias is slope · key position / √head_dim (Bloom's is not scaled),
// and transformers' build_alibi_tensor rounds slopes and products to bfloat16, as this does.
// ln_f, and an lm_head without a bias, tied to word_embeddings unless tie_word_embeddings is false.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/falcon_config.h"
#include "models/transformer_model.h"
#include "nn/alibi.h"
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

/// h.{i}: self_attention.{query_key_value, dense}, mlp.{dense_h_to_4h, dense_4h_to_h}, and the
/// norms FalconDecoderLayer builds: ln_attn and ln_mlp (new architecture with two norms),
/// input_layernorm (parallel with one), input_layernorm and post_attention_layernorm (sequential).
struct FalconLayer {
  LayerNorm inputNorm{nullptr}, postNorm{nullptr}, lnAttn{nullptr}, lnMlp{nullptr};
  Linear qkv{nullptr}, dense{nullptr}, up{nullptr}, down{nullptr};

  FalconLayer(torch::nn::Module& root, const std::string& p, const FalconConfig& c) {
    const int64_t C = c.hiddenSize;
    const double eps = c.layerNormEps;
    if (c.twoNorms()) {
      lnAttn = addModule(root, p + "ln_attn", LayerNorm(C, eps));
      lnMlp = addModule(root, p + "ln_mlp", LayerNorm(C, eps));
    } else {
      inputNorm = addModule(root, p + "input_layernorm", LayerNorm(C, eps));
      if (!c.parallelAttn)
        postNorm = addModule(root, p + "post_attention_layernorm", LayerNorm(C, eps));
    }
    qkv = addModule(root, p + "self_attention.query_key_value", Linear(C, c.qkvWidth(), c.bias));
    dense = addModule(root, p + "self_attention.dense", Linear(C, C, c.bias));
    up = addModule(root, p + "mlp.dense_h_to_4h", Linear(C, c.ffnHiddenSize, c.bias));
    down = addModule(root, p + "mlp.dense_4h_to_h", Linear(c.ffnHiddenSize, C, c.bias));
  }
};

/// The grouped and multi-query layouts (multi-query is one group of H queries): qkv [B, T,
/// Hkv·(G + 2)·hd], each group [q … q k v] with G = H / Hkv -> q [B, H, T, hd] (query head g·G + i
/// is group g's i-th), k and v [B, Hkv, T, hd].
QkvHeads splitGrouped(const torch::Tensor& qkv, int64_t heads, int64_t kvHeads, int64_t hd,
                      TraceRecorder& rec, int qkvStep) {
  const int64_t B = qkv.size(0), T = qkv.size(1), G = heads / kvHeads;
  const torch::Tensor g = qkv.view({B, T, kvHeads, G + 2, hd});
  const int s =
      rec.record("qkv_groups", "qkv.view(B, T, Hkv, H / Hkv + 2, hd)", "reshape", g, {qkvStep});
  QkvHeads r;
  r.q = g.narrow(3, 0, G).reshape({B, T, heads, hd}).transpose(1, 2);
  r.qStep = rec.record("q", "qkv[:, :, :, :-2].flatten(2, 3).transpose(1, 2)", "split", r.q, {s});
  r.k = g.select(3, G).transpose(1, 2);
  r.kStep = rec.record("k", "qkv[:, :, :, -2].transpose(1, 2)", "split", r.k, {s});
  r.v = g.select(3, G + 1).transpose(1, 2);
  r.vStep = rec.record("v", "qkv[:, :, :, -1].transpose(1, 2)", "split", r.v, {s});
  return r;
}

/// build_alibi_tensor over every key (with a key/value cache more than x's positions): slope_h ·
/// key position, slopes and products in bfloat16 as transformers computes them, then times
/// `scale` (inv_norm_factor) -> [B, H, 1, Tk] float32. Padded keys get 0; the mask removes them.
torch::Tensor falconAlibi(const torch::Tensor& slopes, const std::vector<int>& keyLengths,
                          int64_t keys, double scale) {
  const torch::Tensor positions = alibiBias(torch::ones({1}), keyLengths, keys);  // [B, 1, 1, Tk]
  const torch::Tensor product =
      positions.to(torch::kBFloat16) * slopes.to(torch::kBFloat16).view({1, -1, 1, 1});
  return product.to(torch::kFloat).mul_(scale);
}

class FalconFamily final : public DecoderFamily {
 public:
  explicit FalconFamily(const std::string& folder)
      : DecoderFamily(folder),
        m_c(FalconConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": activation")) {
    if (m_c.alibi) {
      m_slopes = alibiSlopes(m_c.numHeads);
    } else {
      m_rotary.emplace(
          rotaryOptions(m_c.ropeScaling, m_c.headDim(), m_c.ropeTheta, m_c.maxPositions));
    }
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "word_embeddings", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "h." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "ln_f", LayerNorm(m_c.hiddenSize, m_c.layerNormEps));
    WeightRules rules;
    rules.family = "Falcon";
    rules.prefixes = {"transformer."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};  // a buffer older checkpoints saved
    if (m_c.tieWordEmbeddings) {
      rules.tied = {{"word_embeddings.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "transformer.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a FalconModel: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    // ALiBi has no trained context length: no limit but RunLimits::maxTokens.
    return decoderInfo("falcon", m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                       m_c.alibi ? 0 : rotaryMaxPositions(m_c.ropeScaling, m_c.maxPositions));
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    FalconLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads, Hkv = m_c.numKvHeads, hd = m_c.headDim();
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h, mlpIn;
    int normStep = -1, mlpNormStep = -1;
    if (m_c.twoNorms()) {
      h = L.lnAttn(x);
      normStep = rec.record("ln_attn", "self.ln_attn(x)", "layernorm", h, {xStep});
      mlpIn = L.lnMlp(x);
      mlpNormStep = rec.record("ln_mlp", "self.ln_mlp(x)", "layernorm", mlpIn, {xStep});
    } else {
      h = L.inputNorm(x);
      normStep = rec.record("input_layernorm", "self.input_layernorm(x)", "layernorm", h, {xStep});
      mlpNormStep = normStep;  // parallel: the MLP reads the same normed input
    }
    QkvHeads r;  // views of qkv, which they keep alive until the attention has read them
    {
      const torch::Tensor qkv = L.qkv(h);
      const int qkvStep = rec.record("qkv", "self.query_key_value(x)", "linear", qkv, {normStep});
      r = m_c.layout() == FalconQkvLayout::PerHead
              ? splitFusedQkv(qkv, QkvLayout::InterleavedPerHead, H, rec, qkvStep)
              : splitGrouped(qkv, H, Hkv, hd, rec, qkvStep);
    }
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "self.inv_norm_factor";
    if (m_rotary) {
      const auto& [cos, sin] = m_rotary->cosSin(ctx.positions);
      r = rotateAndRepeat(std::move(r), H, cos, sin, m_rotary->rotary().describe(hd), rec);
    } else {
      if (Hkv != H) {
        const std::string repeat = "broadcast_to(·, q.shape) (" + std::to_string(H / Hkv) + ")";
        r.k = repeatKv(r.k, H / Hkv);
        r.kStep = rec.record("k_repeat", "k " + repeat, "repeat_kv", r.k, {r.kStep});
        r.v = repeatKv(r.v, H / Hkv);
        r.vStep = rec.record("v_repeat", "v " + repeat, "repeat_kv", r.v, {r.vStep});
      }
      // [B, H, 1, Tk]: with a key/value cache (generation) more keys than x's positions.
      const int64_t keys = std::max<int64_t>(
          x.size(1), *std::max_element(ctx.keyLengths->begin(), ctx.keyLengths->end()));
      sdpa.bias = falconAlibi(m_slopes, *ctx.keyLengths, keys, sdpa.scale).to(x.device());
      sdpa.biasText = "alibi * self.inv_norm_factor";
    }
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.dense(t); }, "self.dense(merged)",
                   [&] { return outputWeightByHead(L.dense->weight, H); }};
    tail.mergeExpression = "attn_output.transpose(1, 2).reshape(B, T, H * hd)";
    tail.valueNorms = ctx.valueNorms;  // one value head per query head after the repeat
    int attnStep = -1;
    const torch::Tensor attnOut = attentionTail(std::move(r), sdpa, tail, rec, &attnStep);
    const MlpProjection up{[&](const torch::Tensor& t) { return L.up(t); },
                           "self.dense_h_to_4h(x)"};
    const MlpProjection down{[&](const torch::Tensor& t) { return L.down(t); },
                             "self.dense_4h_to_h(h)"};
    int s = -1;
    if (m_c.parallelAttn) {
      // Both sublayers read the block's input: x + attn(ln_attn(x)) + mlp(ln_mlp(x)).
      h = feedForward(m_c.twoNorms() ? std::move(mlpIn) : std::move(h), up, m_act, down, nullptr,
                      rec, mlpNormStep, &s);
      h.add_(attnOut).add_(x);  // x belongs to the caller's loop
      rec.record("residual", "mlp_out + attn_out + x", "add", h, {s, attnStep, xStep});
      return h;
    }
    return sequentialMlp(attnOut, x, attnStep, xStep, L.postNorm, up, m_act, down, rec);
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_norm(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return headOrTied(m_head, m_c.tieWordEmbeddings, m_embed, hidden);
  }

 private:
  FalconConfig m_c;
  Activation m_act;
  std::optional<RotaryCache> m_rotary;  // rotary positions; none with ALiBi
  torch::Tensor m_slopes;               // ALiBi's [H] slopes
  EmbeddingTable m_embed{nullptr};
  std::vector<FalconLayer> m_layers;
  LayerNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openFalconFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<FalconFamily>(folder), name);
}

}  // namespace attnscope
