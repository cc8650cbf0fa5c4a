// SPDX-License-Identifier: GPL-3.0-or-later
// BART (Hugging Face's BartForConditionalGeneration / BartModel) and Marian (MarianMTModel: the
// Helsinki-NLP opus-mt translation models): post-norm encoder-decoders with biased q/k/v/out
// projections scaled by head_dim^-0.5, token embeddings optionally scaled by sqrt(d_model), and
// learned positions offset by 2 plus an embedding LayerNorm (BART) or sinusoidal positions
// (Marian), a head tied to the shared embedding with final_logits_bias. Marian's tokenizer maps
// the pieces of its source.spm / target.spm through the folder's vocab.json.
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "attnscope/error.h"
#include "attnscope/sentencepiece_tokenizer.h"
#include "io/file_io.h"
#include "models/encoder_decoder_family.h"
#include "models/encoder_decoder_models.h"
#include "models/transformer_model.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/projected_attention.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

enum class Flavour { Bart, Marian };

/// config.json of a BART or Marian checkpoint, with the defaults of transformers' config classes.
struct BartConfig {
  int vocabSize = 0, dModel = 0, layers = 0, decoderLayers = 0, heads = 0, ffn = 0, decoderFfn = 0,
      positions = 0, pad = 1;
  Activation act = Activation::Gelu;
  bool scaleEmbedding = false;
  bool tied = true;

  BartConfig(const ConfigReader& c, Flavour f) {
    vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
    dModel = c.integer({"d_model"}, 2, 1 << 16);
    layers = c.integer({"encoder_layers"}, 1, 256);
    decoderLayers = c.integer({"decoder_layers"}, 1, 256);
    heads = c.integer({"encoder_attention_heads"}, 1, 1024);
    const int decoderHeads = c.integer({"decoder_attention_heads"}, 1, 1024);
    // One head count per model (ModelInfo::heads); every published BART and Marian has it.
    if (decoderHeads != heads)
      c.fail("decoder_attention_heads (" + std::to_string(decoderHeads) +
             ") must equal encoder_attention_heads (" + std::to_string(heads) + ")");
    if (dModel % heads != 0)
      c.fail("encoder_attention_heads (" + std::to_string(heads) + ") must divide d_model (" +
             std::to_string(dModel) + ")");
    ffn = c.integer({"encoder_ffn_dim"}, 1, 1 << 18);
    decoderFfn = c.integer({"decoder_ffn_dim"}, 1, 1 << 18);
    positions = c.integer({"max_position_embeddings"}, 1, 1 << 20, 1024);
    pad = c.integer({"pad_token_id"}, 0, 1 << 22, 1);
    act = parseActivation(c.string("activation_function", f == Flavour::Marian ? "swish" : "gelu"),
                          c.source() + ": activation_function");
    scaleEmbedding = c.flag("scale_embedding", f == Flavour::Marian);
    tied = c.flag("tie_word_embeddings", true);
    // Pre-norm variants (mBART's normalize_before, a final layer_norm) and Marian checkpoints
    // with separate decoder embeddings have other tensors and formulas: refused, not guessed.
    if (c.flag("normalize_before", false) || c.flag("add_final_layer_norm", false))
      c.fail(
          "normalize_before / add_final_layer_norm (pre-norm layers, as mBART) are not "
          "supported; bart and marian are post-norm");
    if (!c.flag("share_encoder_decoder_embeddings", true))
      c.fail(
          "share_encoder_decoder_embeddings false (separate decoder embeddings) is not "
          "supported");
    if (f == Flavour::Marian && dModel % 2 != 0)
      c.fail("d_model must be even for sinusoidal positions, got " + std::to_string(dModel));
  }

  std::string describe(Flavour f) const {
    return std::string(f == Flavour::Bart ? "bart" : "marian") + ": " + std::to_string(layers) +
           "+" + std::to_string(decoderLayers) + " layers, " + std::to_string(heads) +
           " heads, d_model " + std::to_string(dModel) + ", ffn " + std::to_string(ffn) + "/" +
           std::to_string(decoderFfn) + ", vocab_size " + std::to_string(vocabSize);
  }
};

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

/// Marian's vocabulary: the pieces of source.spm and target.spm mapped to the model's ids through
/// vocab.json (the SentencePiece models' own ids are not the model's).
class MarianVocabulary {
 public:
  explicit MarianVocabulary(const std::string& folder)
      : m_source(SentencePieceTokenizer::fromFile(path(folder, "source.spm"))),
        m_target(SentencePieceTokenizer::fromFile(path(folder, "target.spm"))) {
    const std::string file = path(folder, "vocab.json");
    const nlohmann::json vocab =
        nlohmann::json::parse(readFile(file, kMaxConfigBytes), nullptr, /*allow_exceptions=*/false);
    if (!vocab.is_object()) throw Error(ErrorKind::Format, file + ": not a JSON object");
    for (const auto& [piece, id] : vocab.items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 22))
        throw Error(ErrorKind::Format,
                    file + ": the id of \"" + piece + "\" must be a whole number from 0");
      m_ids[piece] = id.get<int64_t>();
      m_pieces[id.get<int64_t>()] = piece;
    }
    const auto unk = m_ids.find("<unk>");
    if (unk == m_ids.end()) throw Error(ErrorKind::Format, file + " has no \"<unk>\"");
    m_unk = unk->second;
  }

  std::vector<Token> encode(const std::string& text, bool target) const {
    std::vector<Token> tokens = (target ? m_target : m_source).encode(text);
    for (Token& t : tokens) {
      const Token piece = (target ? m_target : m_source).tokenOf(t.id);
      const auto id = m_ids.find(pieceString(piece));
      t.unknown = t.unknown || id == m_ids.end();
      t.id = id == m_ids.end() ? m_unk : id->second;
    }
    return tokens;
  }
  Token tokenOf(int64_t id) const {
    Token t;
    t.id = id;
    const auto piece = m_pieces.find(id);
    if (piece == m_pieces.end()) {
      t.label = "<id " + std::to_string(id) + ">";
      t.unknown = true;
      return t;
    }
    t.text = piece->second;
    // "▁" (U+2581) starts a word: shown and decoded as a space.
    for (std::size_t at; (at = t.text.find("\xE2\x96\x81")) != std::string::npos;)
      t.text.replace(at, 3, " ");
    t.label = piece->second;
    for (std::size_t at; (at = t.label.find("\xE2\x96\x81")) != std::string::npos;)
      t.label.replace(at, 3, "\xE2\x90\xA3");  // ␣
    t.special =
        piece->second.size() > 2 && piece->second.front() == '<' && piece->second.back() == '>';
    return t;
  }
  std::size_t size() const { return m_pieces.empty() ? 0 : m_pieces.rbegin()->first + 1; }

 private:
  static std::string path(const std::string& folder, const char* name) {
    return (std::filesystem::path(folder) / name).string();
  }
  /// The vocabulary string of a SentencePiece token: its bytes with spaces as "▁".
  static std::string pieceString(const Token& piece) {
    std::string s = piece.text;
    for (std::size_t at = 0; (at = s.find(' ', at)) != std::string::npos; at += 3)
      s.replace(at, 1, "\xE2\x96\x81");
    return s;
  }

  SentencePieceTokenizer m_source, m_target;
  std::unordered_map<std::string, int64_t> m_ids;
  std::map<int64_t, std::string> m_pieces;
  int64_t m_unk = 0;
};

class BartFamily final : public EncoderDecoderFamily {
 public:
  BartFamily(const std::string& folder, Flavour f)
      : EncoderDecoderFamily(folder, f == Flavour::Bart ? 2 : padOf(folder),
                             f == Flavour::Bart ? 2 : 0),
        m_flavour(f),
        m_c(m_config, f) {
    if (f == Flavour::Marian) {
      m_marian = std::make_unique<MarianVocabulary>(folder);
      if (m_marian->size() > static_cast<std::size_t>(m_c.vocabSize))
        m_config.fail("vocab.json has " + std::to_string(m_marian->size()) +
                      " ids but vocab_size is " + std::to_string(m_c.vocabSize));
    } else {
      checkVocabulary(m_c.vocabSize);
    }
    torch::nn::Module& root = *m_root;
    const int64_t C = m_c.dModel;
    m_shared = addModule(root, "shared", EmbeddingTable(m_c.vocabSize, C));
    for (const bool decoder : {false, true}) {
      const std::string stack = decoder ? "decoder" : "encoder";
      if (f == Flavour::Bart) {
        // BartLearnedPositionalEmbedding: two rows more than positions, looked up at t + 2.
        (decoder ? m_decoderPositions : m_encoderPositions) =
            addModule(root, stack + ".embed_positions", EmbeddingTable(m_c.positions + 2, C));
        (decoder ? m_decoderEmbedNorm : m_encoderEmbedNorm) =
            addModule(root, stack + ".layernorm_embedding", LayerNorm(C, 1e-5));
      }
      const int n = decoder ? m_c.decoderLayers : m_c.layers;
      for (int l = 0; l < n; ++l)
        (decoder ? m_decoder : m_encoder)
            .emplace_back(root, stack + ".layers." + std::to_string(l) + ".", C,
                          decoder ? m_c.decoderFfn : m_c.ffn, decoder);
    }
    if (!m_c.tied && hasTensor("lm_head.weight", "model."))
      m_head = addModule(root, "lm_head", Linear(C, m_c.vocabSize, false));
    const bool head = m_c.tied || m_head;
    if (head && hasTensor("final_logits_bias", "model."))
      m_logitsBias = addParameter(root, "final_logits_bias", torch::empty({1, m_c.vocabSize}));
    WeightRules rules;
    rules.family = f == Flavour::Bart ? "BART" : "Marian";
    rules.prefixes = {"model."};
    rules.ignoredNames = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
    rules.tied = {{"shared.weight", "encoder.embed_tokens.weight"},
                  {"shared.weight", "decoder.embed_tokens.weight"}};
    if (m_c.tied) {
      rules.tied.emplace_back("shared.weight", "lm_head.weight");
      rules.ignoredNames.emplace_back("lm_head.weight");
    }
    // Marian's sinusoidal table is computed, not read (older checkpoints saved it).
    if (f == Flavour::Marian) rules.ignoredSuffixes = {"embed_positions.weight"};
    loadFrozen(root, rules, m_c.describe(f));
    if (f == Flavour::Marian) m_sinusoid = sinusoid(m_c.positions, C);
  }

  ModelInfo info() const override {
    ModelInfo i = encoderDecoderInfo(m_flavour == Flavour::Bart ? "bart" : "marian", m_c.layers,
                                     m_c.decoderLayers, m_c.heads, m_c.dModel, m_c.positions);
    i.parameterBytes = parameterBytes(*m_root);
    return i;
  }
  torch::nn::Module& module() override { return *m_root; }

  Token vocabularyToken(int64_t id) const override {
    return m_marian ? m_marian->tokenOf(id) : EncoderDecoderFamily::vocabularyToken(id);
  }

  uint64_t activationBytesPerToken() const override {
    return 4 * (8ull * m_c.dModel + 2ull * std::max(m_c.ffn, m_c.decoderFfn));
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return embed(ids, false); }
  torch::Tensor embedDecoderIds(const torch::Tensor& ids) override { return embed(ids, true); }

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
    } else if (m_c.tied) {
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

  static int padOf(const std::string& folder) {
    // Marian starts decoding with its pad token.
    return ConfigReader::fromFile((std::filesystem::path(folder) / "config.json").string())
        .integer({"pad_token_id"}, 0, 1 << 22, 0);
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

  torch::Tensor embed(const torch::Tensor& ids, bool decoder) {
    const int64_t T = ids.size(1);
    if (T > m_c.positions)
      throw Error(ErrorKind::InvalidArgument,
                  std::string(decoder ? "the decoder input" : "the source") + " has " +
                      std::to_string(T) + " tokens, more than the model's " +
                      std::to_string(m_c.positions) + " positions");
    torch::Tensor x = m_shared(ids);
    if (m_c.scaleEmbedding) x = x * std::sqrt(static_cast<double>(m_c.dModel));
    if (m_flavour == Flavour::Bart) {
      const torch::Tensor positions = torch::arange(T, ids.options()) + 2;
      x = x + (decoder ? m_decoderPositions : m_encoderPositions)(positions).unsqueeze(0);
      return (decoder ? m_decoderEmbedNorm : m_encoderEmbedNorm)(x);
    }
    return x + m_sinusoid.narrow(0, 0, T).to(x.device()).unsqueeze(0);
  }

  torch::Tensor block(BartLayer& b, const torch::Tensor& x, LayerContext& ctx, bool decoder) {
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    const double scale = 1.0 / std::sqrt(static_cast<double>(m_c.dModel / m_c.heads));
    SdpaOptions sdpa;
    sdpa.scale = scale;
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.mask = ctx.mask;
    sdpa.buffers = ctx.buffers;
    int s = -1;
    torch::Tensor h = projectedAttention(b.self, x, xStep, x, xStep, m_c.heads, sdpa, rec, "", &s);
    h = b.selfNorm(h.add_(x));  // post-norm; x belongs to the caller's loop
    int at = rec.record("self_attn_layer_norm", "self.self_attn_layer_norm(x + attn_out)",
                        "layernorm", h, {xStep, s});
    if (decoder) {
      const int memoryStep =
          rec.record("encoder_hidden_states", "encoder_outputs[0]", "input", ctx.context);
      SdpaOptions cross = sdpa;
      cross.mask = ctx.crossMask;
      cross.buffers = ctx.crossBuffers;
      torch::Tensor c = projectedAttention(b.cross, h, at, ctx.context, memoryStep, m_c.heads,
                                           cross, rec, "cross", &s);
      h = b.crossNorm(c.add_(h));
      at = rec.record("encoder_attn_layer_norm", "self.encoder_attn_layer_norm(x + cross_out)",
                      "layernorm", h, {at, s});
    }
    const MlpProjection fc1{[&](const torch::Tensor& t) { return b.fc1(t); }, "self.fc1(x)"};
    const MlpProjection fc2{[&](const torch::Tensor& t) { return b.fc2(t); }, "self.fc2(h)"};
    torch::Tensor f = feedForward(h, fc1, m_c.act, fc2, nullptr, rec, at, &s);
    h = b.finalNorm(f.add_(h));
    rec.record("final_layer_norm", "self.final_layer_norm(x + ff_out)", "layernorm", h, {at, s});
    return h;
  }

  Flavour m_flavour;
  BartConfig m_c;
  std::unique_ptr<MarianVocabulary> m_marian;
  std::shared_ptr<torch::nn::Module> m_root = std::make_shared<torch::nn::Module>();
  EmbeddingTable m_shared{nullptr}, m_encoderPositions{nullptr}, m_decoderPositions{nullptr};
  LayerNorm m_encoderEmbedNorm{nullptr}, m_decoderEmbedNorm{nullptr};
  std::vector<BartLayer> m_encoder, m_decoder;
  Linear m_head{nullptr};
  torch::Tensor m_logitsBias;  // [1, V] final_logits_bias, when the checkpoint has it
  torch::Tensor m_sinusoid;    // [positions, C] Marian
};

}  // namespace

std::shared_ptr<Model> openBartFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BartFamily>(folder, Flavour::Bart),
                                            name);
}

std::shared_ptr<Model> openMarianFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<BartFamily>(folder, Flavour::Marian),
                                            name);
}

}  // namespace attnscope
