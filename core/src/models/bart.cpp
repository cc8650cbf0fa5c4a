// SPDX-License-Identifier: GPL-3.0-or-later
// BART (Hugging Face's BartForConditionalGeneration / BartModel) and Marian (MarianMTModel: the
// Helsinki-NLP opus-mt translation models): post-norm encoder-decoders with biased q/k/v/out
// projections scaled by head_dim^-0.5, token embeddings optionally scaled by sqrt(d_model), and
// learned positions offset by 2 plus an embedding LayerNorm (BART) or sinusoidal positions
// (Marian), a head tied to the shared embedding with final_logits_bias. Marian's tokenizer maps
// the pieces of its source.spm / target.spm through the folder's vocab.json.
#include <algorithm>
#include <cmath>
#include <memory>

#include "attnscope/error.h"
#include "models/bart_config.h"
#include "models/encoder_decoder_family.h"
#include "models/encoder_decoder_models.h"
#include "models/transformer_model.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/projected_attention.h"
#include "nn/state_dict.h"
#include "tokenizers/marian_vocabulary.h"

namespace attnscope {
namespace {

using BartFlavour = BartConfig::Flavour;

/// {encoder,decoder}.layers.{i}: self_attn.{q,k,v,out}_proj, self_attn_layer_norm, for the
/// decoder encoder_attn.{q,k,v,out}_proj and encoder_attn_layer_norm, fc1, fc2, final_layer_norm.
struct BartLayer {
  AttentionProjections self, cross;
  LayerNorm selfNorm{nullptr}, crossNorm{nullptr}, finalNorm{nullptr};
  Linear fc1{nullptr}, fc2{nullptr};

  BartLayer(torch::nn::Module& root, const std::string& p, int64_t C, int64_t ffn, bool decoder) {
    const auto attention = [&](const std::string& at) {
      AttentionProjections a;
      a.q = addModule(root, at + ".q_proj", Linear(C, C));
      a.k = addModule(root, at + ".k_proj", Linear(C, C));
      a.v = addModule(root, at + ".v_proj", Linear(C, C));
      a.o = addModule(root, at + ".out_proj", Linear(C, C));
      a.qName = "q_proj";
      a.kName = "k_proj";
      a.vName = "v_proj";
      a.oName = "out_proj";
      return a;
    };
    self = attention(p + "self_attn");
    selfNorm = addModule(root, p + "self_attn_layer_norm", LayerNorm(C, 1e-5));
    if (decoder) {
      cross = attention(p + "encoder_attn");
      crossNorm = addModule(root, p + "encoder_attn_layer_norm", LayerNorm(C, 1e-5));
    }
    fc1 = addModule(root, p + "fc1", Linear(C, ffn));
    fc2 = addModule(root, p + "fc2", Linear(ffn, C));
    finalNorm = addModule(root, p + "final_layer_norm", LayerNorm(C, 1e-5));
  }
};

class BartFamily final : public EncoderDecoderFamily {
 public:
  BartFamily(const std::string& folder, BartFlavour f)
      : EncoderDecoderFamily(folder),
        m_c(BartConfig::fromReader(m_config, f)),
        m_act(parseActivation(m_c.activation, m_config.source() + ": activation_function")) {
    setSpecialTokens(m_c.decoderStartTokenId, m_c.eosTokenId);
    // Marian's ids are vocab.json's, not its SentencePiece models'.
    if (f == BartFlavour::Marian) m_marian = std::make_unique<MarianVocabulary>(folder);
    torch::nn::Module& root =
        m_marian ? rootForVocabulary(m_c.vocabSize, m_marian->size(), m_marian->source())
                 : rootForVocabulary(m_c.vocabSize);
    const int64_t C = m_c.dModel;
    m_shared = addModule(root, "shared", EmbeddingTable(m_c.vocabSize, C));
    for (const bool decoder : {false, true}) {
      const std::string stack = decoder ? "decoder" : "encoder";
      if (f == BartFlavour::Bart) {
        // BartLearnedPositionalEmbedding: two rows more than positions, looked up at t + 2.
        (decoder ? m_decoderPositions : m_encoderPositions) =
            addModule(root, stack + ".embed_positions", EmbeddingTable(m_c.maxPositions + 2, C));
        (decoder ? m_decoderEmbedNorm : m_encoderEmbedNorm) =
            addModule(root, stack + ".layernorm_embedding", LayerNorm(C, 1e-5));
      }
      const int n = decoder ? m_c.decoderLayers : m_c.encoderLayers;
      for (int l = 0; l < n; ++l)
        (decoder ? m_decoder : m_encoder)
            .emplace_back(root, stack + ".layers." + std::to_string(l) + ".", C,
                          decoder ? m_c.decoderFfnDim : m_c.encoderFfnDim, decoder);
    }
    if (!m_c.tieWordEmbeddings && hasTensor("lm_head.weight", "model."))
      m_head = addModule(root, "lm_head", Linear(C, m_c.vocabSize, false));
    const bool head = m_c.tieWordEmbeddings || m_head;
    if (head && hasTensor("final_logits_bias", "model."))
      m_logitsBias = addParameter(root, "final_logits_bias", torch::empty({1, m_c.vocabSize}));
    WeightRules rules;
    rules.family = f == BartFlavour::Bart ? "BART" : "Marian";
    rules.prefixes = {"model."};
    rules.ignoredNames = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
    rules.tied = {{"shared.weight", "encoder.embed_tokens.weight"},
                  {"shared.weight", "decoder.embed_tokens.weight"}};
    if (m_c.tieWordEmbeddings) {
      rules.tied.emplace_back("shared.weight", "lm_head.weight");
      rules.ignoredNames.emplace_back("lm_head.weight");
    }
    // Marian's sinusoidal table is computed, not read (older checkpoints saved it).
    if (f == BartFlavour::Marian) rules.ignoredSuffixes = {"embed_positions.weight"};
    loadFrozen(root, rules, m_c.describe());
    if (f == BartFlavour::Marian) m_sinusoid = sinusoid(m_c.maxPositions, C);
  }

  ModelInfo info() const override {
    return encoderDecoderInfo(m_c.flavour == BartFlavour::Bart ? "bart" : "marian",
                              m_c.encoderLayers, m_c.decoderLayers, m_c.numHeads, m_c.dModel,
                              m_c.maxPositions);
  }

  Token vocabularyToken(int64_t id) const override {
    return m_marian ? m_marian->tokenOf(id) : EncoderDecoderFamily::vocabularyToken(id);
  }

  uint64_t activationBytesPerToken() const override {
    return 4 * (8ull * m_c.dModel + 2ull * std::max(m_c.encoderFfnDim, m_c.decoderFfnDim));
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return embed(ids, false); }
  torch::Tensor embedDecoderIds(const torch::Tensor& ids) override { return embed(ids, true); }
  torch::Tensor embedDecoderIdsAt(const torch::Tensor& ids, int64_t start) override {
    return embed(ids, true, start);
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    return block(m_encoder[static_cast<std::size_t>(index)], x, ctx, false);
  }
  torch::Tensor decoderLayer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    return block(m_decoder[static_cast<std::size_t>(index)], x, ctx, true);
  }

  torch::Tensor logits(const torch::Tensor& hidden) override {
    torch::Tensor out;
    if (m_head) {
      out = m_head(hidden);
    } else if (m_c.tieWordEmbeddings) {
      out = linearForward(hidden, m_shared->weight, {});
    } else {
      return {};
    }
    return m_logitsBias.defined() ? out + computeWeight(m_logitsBias)[0] : out;
  }

 private:
  std::vector<Token> encodeText(const std::string& text, bool target) const override {
    return m_marian ? m_marian->encode(text, target) : m_tokenizer.encode(text);
  }

  /// MarianSinusoidalPositionalEmbedding: sin in the first half, cos in the second.
  static torch::Tensor sinusoid(int64_t positions, int64_t dim) {
    const torch::Tensor pos = torch::arange(positions, torch::kDouble).unsqueeze(1);
    const torch::Tensor j = torch::arange(dim, torch::kDouble);
    const torch::Tensor angle = pos / torch::pow(10000.0, 2 * torch::floor(j / 2) / dim);
    const int64_t half = dim / 2 + dim % 2;
    torch::Tensor out = torch::empty({positions, dim}, torch::kDouble);
    out.narrow(1, 0, half)
        .copy_(torch::sin(angle.index(
            {torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)})));
    out.narrow(1, half, dim - half)
        .copy_(torch::cos(angle.index(
            {torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)})));
    return out.to(torch::kFloat);
  }

  /// ids at positions start.. ([B, T]) -> [B, T, C]: token and position embeddings.
  torch::Tensor embed(const torch::Tensor& ids, bool decoder, int64_t start = 0) {
    const int64_t T = start + ids.size(1);
    if (T > m_c.maxPositions)
      throw Error(ErrorKind::InvalidArgument,
                  std::string(decoder ? "the decoder input" : "the source") + " has " +
                      std::to_string(T) + " tokens, more than the model's " +
                      std::to_string(m_c.maxPositions) + " positions");
    torch::Tensor x = m_shared(ids);
    if (m_c.scaleEmbedding) x = x * std::sqrt(static_cast<double>(m_c.dModel));
    if (m_c.flavour == BartFlavour::Bart) {
      const torch::Tensor positions = torch::arange(start, T, ids.options()) + 2;
      x = x + (decoder ? m_decoderPositions : m_encoderPositions)(positions).unsqueeze(0);
      return (decoder ? m_decoderEmbedNorm : m_encoderEmbedNorm)(x);
    }
    return x + m_sinusoid.narrow(0, start, T - start).to(x.device()).unsqueeze(0);
  }

  torch::Tensor block(BartLayer& b, const torch::Tensor& x, LayerContext& ctx, bool decoder) {
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    const double scale = 1.0 / std::sqrt(static_cast<double>(m_c.headDim()));
    SdpaOptions sdpa;
    sdpa.scale = scale;
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.mask = ctx.mask;
    sdpa.buffers = ctx.buffers;
    int s = -1;
    torch::Tensor h =
        projectedAttention(b.self, x, xStep, x, xStep, m_c.numHeads, sdpa, rec, "", &s);
    h = b.selfNorm(h.add_(x));  // post-norm; x belongs to the caller's loop
    int at = rec.record("self_attn_layer_norm", "self.self_attn_layer_norm(x + attn_out)",
                        "layernorm", h, {xStep, s});
    if (decoder) {
      const int memoryStep =
          rec.record("encoder_hidden_states", "encoder_outputs[0]", "input", ctx.context);
      SdpaOptions cross = sdpa;
      cross.mask = ctx.crossMask;
      cross.buffers = ctx.crossBuffers;
      torch::Tensor c = projectedAttention(b.cross, h, at, ctx.context, memoryStep, m_c.numHeads,
                                           cross, rec, "cross", &s);
      h = b.crossNorm(c.add_(h));
      at = rec.record("encoder_attn_layer_norm", "self.encoder_attn_layer_norm(x + cross_out)",
                      "layernorm", h, {at, s});
    }
    const MlpProjection fc1{[&](const torch::Tensor& t) { return b.fc1(t); }, "self.fc1(x)"};
    const MlpProjection fc2{[&](const torch::Tensor& t) { return b.fc2(t); }, "self.fc2(h)"};
    torch::Tensor f = feedForward(h, fc1, m_act, fc2, nullptr, rec, at, &s);
    h = b.finalNorm(f.add_(h));
    rec.record("final_layer_norm", "self.final_layer_norm(x + ff_out)", "layernorm", h, {at, s});
    return h;
  }

  BartConfig m_c;
  Activation m_act;                            // from activation_function
  std::unique_ptr<MarianVocabulary> m_marian;  // Marian only
  EmbeddingTable m_shared{nullptr}, m_encoderPositions{nullptr}, m_decoderPositions{nullptr};
  LayerNorm m_encoderEmbedNorm{nullptr}, m_decoderEmbedNorm{nullptr};
  std::vector<BartLayer> m_encoder, m_decoder;
  Linear m_head{nullptr};
  torch::Tensor m_logitsBias;  // [1, V] final_logits_bias, when the checkpoint has it
  torch::Tensor m_sinusoid;    // [positions, C] Marian
};

}  // namespace

std::shared_ptr<Model> openBartFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BartFamily>(folder, BartFlavour::Bart),
                                            name);
}

std::shared_ptr<Model> openMarianFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(
      std::make_shared<BartFamily>(folder, BartFlavour::Marian), name);
}

}  // namespace attnscope
