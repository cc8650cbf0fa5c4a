// SPDX-License-Identifier: GPL-3.0-or-later
// T5, T5 v1.1 and Flan-T5 (Hugging Face's T5ForConditionalGeneration / T5Model): the t5 family.
// Pre-RMSNorm blocks without biases, unscaled scores plus a bucketed relative position bias that
// the first block of each stack computes and every block reuses (bidirectional in the encoder,
// causal in the decoder), cross-attention over the encoder's output, a ReLU or gated-GELU
// feed-forward, and a head tied to the embedding (rescaled by d_model^-0.5) or not.
#include "models/encoder_decoder_models.h"

#include <cmath>
#include <utility>

#include "generation/layer_kv_cache.h"
#include "models/encoder_decoder_family.h"
#include "models/t5_config.h"
#include "models/transformer_model.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/projected_attention.h"
#include "nn/relative_position_bias.h"
#include "nn/rms_norm.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

/// {encoder,decoder}.block.{i}: layer.0 (layer_norm, SelfAttention.{q,k,v,o}), for the decoder
/// layer.1 (layer_norm, EncDecAttention.{q,k,v,o}), then the feed-forward layer (layer_norm,
/// DenseReluDense.{wi,wo} or {wi_0,wi_1,wo}).
struct T5Block {
  RmsNorm selfNorm{nullptr}, crossNorm{nullptr}, ffNorm{nullptr};
  AttentionProjections self, cross;
  Linear wi{nullptr}, wi1{nullptr}, wo{nullptr};  // wi is wi_0 when gated

  T5Block(torch::nn::Module& root, const std::string& p, const T5Config& c, bool decoder) {
    const int64_t inner = static_cast<int64_t>(c.numHeads) * c.dKv;
    const auto attention = [&](const std::string& at) {
      AttentionProjections a;
      a.q = addModule(root, at + ".q", Linear(c.dModel, inner, false));
      a.k = addModule(root, at + ".k", Linear(c.dModel, inner, false));
      a.v = addModule(root, at + ".v", Linear(c.dModel, inner, false));
      a.o = addModule(root, at + ".o", Linear(inner, c.dModel, false));
      return a;
    };
    selfNorm = addModule(root, p + "layer.0.layer_norm", RmsNorm(c.dModel, c.layerNormEps));
    self = attention(p + "layer.0.SelfAttention");
    const std::string ff = p + (decoder ? "layer.2." : "layer.1.");
    if (decoder) {
      crossNorm = addModule(root, p + "layer.1.layer_norm", RmsNorm(c.dModel, c.layerNormEps));
      cross = attention(p + "layer.1.EncDecAttention");
    }
    if (c.gated) {
      wi = addModule(root, ff + "DenseReluDense.wi_0", Linear(c.dModel, c.dFf, false));
      wi1 = addModule(root, ff + "DenseReluDense.wi_1", Linear(c.dModel, c.dFf, false));
    } else {
      wi = addModule(root, ff + "DenseReluDense.wi", Linear(c.dModel, c.dFf, false));
    }
    wo = addModule(root, ff + "DenseReluDense.wo", Linear(c.dFf, c.dModel, false));
    ffNorm = addModule(root, ff + "layer_norm", RmsNorm(c.dModel, c.layerNormEps));
  }
};

class T5Family final : public EncoderDecoderFamily {
 public:
  explicit T5Family(const std::string& folder)
      : EncoderDecoderFamily(folder),
        m_c(T5Config::fromReader(m_config)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": feed_forward_proj")) {
    setSpecialTokens(m_c.decoderStartTokenId, m_c.eosTokenId);
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_shared = addModule(root, "shared", EmbeddingTable(m_c.vocabSize, m_c.dModel));
    // Block 0 of each stack owns the relative position bias, registered as the SelfAttention
    // container itself so that its table is SelfAttention.relative_attention_bias.weight and
    // q/k/v/o land beside it.
    for (const bool decoder : {false, true}) {
      const std::string stack = decoder ? "decoder" : "encoder";
      (decoder ? m_decoderBias : m_encoderBias) =
          addModule(root, stack + ".block.0.layer.0.SelfAttention",
                    RelativePositionBias(m_c.numBuckets, m_c.maxDistance, m_c.numHeads, !decoder));
      const int n = decoder ? m_c.numDecoderLayers : m_c.numLayers;
      for (int l = 0; l < n; ++l)
        (decoder ? m_decoder : m_encoder)
            .emplace_back(root, stack + ".block." + std::to_string(l) + ".", m_c, decoder);
      (decoder ? m_decoderNorm : m_encoderNorm) =
          addModule(root, stack + ".final_layer_norm", RmsNorm(m_c.dModel, m_c.layerNormEps));
    }
    WeightRules rules;
    rules.family = "T5";
    // The stacks' embed_tokens are `shared` itself; old checkpoints also carry a cross-attention
    // bias table that transformers never uses.
    rules.ignoredNames = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
    rules.ignoredSuffixes = {"EncDecAttention.relative_attention_bias.weight"};
    rules.tied = {{"shared.weight", "encoder.embed_tokens.weight"},
                  {"shared.weight", "decoder.embed_tokens.weight"}};
    if (m_c.tieWordEmbeddings) {
      rules.tied.emplace_back("shared.weight", "lm_head.weight");
      rules.ignoredNames.emplace_back("lm_head.weight");
    } else if (hasTensor("lm_head.weight", "")) {
      m_head = addModule(root, "lm_head", Linear(m_c.dModel, m_c.vocabSize, false));
    }  // else a T5Model: no language-model head, no predictions
    loadFrozen(root, rules, m_c.describe());
  }

  ModelInfo info() const override {
    return encoderDecoderInfo(m_c.modelType, m_c.numLayers, m_c.numDecoderLayers, m_c.numHeads,
                              m_c.dModel, 0);
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, q, k, v, merged heads, cross-attention's k and v; wi (and wi_1).
    const uint64_t inner = static_cast<uint64_t>(m_c.numHeads) * m_c.dKv;
    return 4 * (4ull * m_c.dModel + 6 * inner + (m_c.gated ? 3ull : 1ull) * m_c.dFf);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_shared(ids); }
  torch::Tensor embedDecoderIds(const torch::Tensor& ids) override { return m_shared(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    if (index == 0) m_bias = m_encoderBias(x.size(1), x.size(1));
    return block(m_encoder[static_cast<std::size_t>(index)], x, ctx, false);
  }
  torch::Tensor decoderLayer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    if (index == 0) {
      // Generation: the new queries come after the cached keys, and the bias reads their
      // absolute positions (HF's cache_position), not 0..Tq-1.
      const int64_t Tq = x.size(1),
                    cached = ctx.buffers.kvCache ? ctx.buffers.kvCache->length() : 0;
      m_bias = m_decoderBias(Tq, cached + Tq, cached);
    }
    return block(m_decoder[static_cast<std::size_t>(index)], x, ctx, true);
  }
  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_encoderNorm(x); }
  torch::Tensor decoderFinalNorm(const torch::Tensor& x) override { return m_decoderNorm(x); }

  torch::Tensor logits(const torch::Tensor& hidden) override {
    if (m_head) return m_head(hidden);
    if (!m_c.tieWordEmbeddings) return {};
    // transformers rescales before a tied head: the embedding was trained at d_model^0.5.
    const torch::Tensor h = hidden * (1.0 / std::sqrt(static_cast<double>(m_c.dModel)));
    return linearForward(h, m_shared->weight, {});
  }

 private:
  torch::Tensor block(T5Block& b, const torch::Tensor& x, LayerContext& ctx, bool decoder) {
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = b.selfNorm(x);
    int s = rec.record("layer_norm", "self.layer[0].layer_norm(x)", "rmsnorm", h, {xStep});
    SdpaOptions sdpa;
    sdpa.bias = m_bias;  // [1, H, T, T]: computed by block 0 of this stack
    sdpa.biasText = decoder ? "position_bias (causal buckets)" : "position_bias (bidirectional)";
    sdpa.mask = ctx.mask;
    sdpa.buffers = ctx.buffers;  // T5 does not scale its scores
    h = projectedAttention(b.self, h, s, h, s, m_c.numHeads, sdpa, rec, "", &s);
    torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    if (decoder) {
      h = b.crossNorm(residual);
      s = rec.record("cross_layer_norm", "self.layer[1].layer_norm(x)", "rmsnorm", h,
                     {residualStep});
      const int memoryStep =
          rec.record("encoder_hidden_states", "encoder_outputs[0]", "input", ctx.context);
      SdpaOptions cross;
      cross.mask = ctx.crossMask;
      cross.buffers = ctx.crossBuffers;
      h = projectedAttention(b.cross, h, s, ctx.context, memoryStep, m_c.numHeads, cross, rec,
                             "cross", &s);
      residual = h.add_(residual);
      residualStep =
          rec.record("residual_cross", "x + cross_attn_out", "add", residual, {residualStep, s});
    }
    const std::string ffAt = decoder ? "self.layer[2]." : "self.layer[1].";
    h = b.ffNorm(residual);
    s = rec.record("ff_layer_norm", ffAt + "layer_norm(x)", "rmsnorm", h, {residualStep});
    const std::string dense = ffAt + "DenseReluDense.";
    const MlpProjection wi{[&](const torch::Tensor& t) { return b.wi(t); },
                           dense + (m_c.gated ? "wi_0(x)" : "wi(x)")};
    const MlpProjection wi1{[&](const torch::Tensor& t) { return b.wi1(t); }, dense + "wi_1(x)"};
    const MlpProjection wo{[&](const torch::Tensor& t) { return b.wo(t); }, dense + "wo(h)"};
    // Gated: wo(act(wi_0(x)) * wi_1(x)); feedForward's gate is the activated one.
    h = m_c.gated ? feedForward(std::move(h), wi1, m_act, wo, &wi, rec, s, &s)
                  : feedForward(std::move(h), wi, m_act, wo, nullptr, rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "x + ff_out", "add", h, {residualStep, s});
    return h;
  }

  T5Config m_c;
  Activation m_act;  // the feed-forward's, from feed_forward_proj
  EmbeddingTable m_shared{nullptr};
  RelativePositionBias m_encoderBias{nullptr}, m_decoderBias{nullptr};
  std::vector<T5Block> m_encoder, m_decoder;
  RmsNorm m_encoderNorm{nullptr}, m_decoderNorm{nullptr};
  Linear m_head{nullptr};
  torch::Tensor m_bias;  // [1, H, T, T] of the stack running now, from its block 0
};

}  // namespace

std::shared_ptr<Model> openT5Folder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<T5Family>(folder), name);
}

}  // namespace attnscope
