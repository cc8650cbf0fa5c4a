// SPDX-License-Identifier: GPL-3.0-or-later
// Phi-3, Phi-3.5 and Phi-4-mini (Hugging Face's Phi3ForCausalLM, model_type phi3): Llama's
// pre-RMSNorm block with the projections fused. self_attn.qkv_proj holds q | k | v side by side
// (H·hd, then Hkv·hd twice: grouped-query sizes), mlp.gate_up_proj holds gate | up (gate first:
// Phi3MLP's `gate, up = gate_up.chunk(2, dim=-1)`, then up · act(gate)). Phi-4-mini rotates only
// partial_rotary_factor of each head; the long-context checkpoints use LongRoPE (rope_scaling
// "longrope", formerly "su"): each frequency divided by its own factor, from short_factor up to
// original_max_position_embeddings and from long_factor past it, and cos/sin multiplied by
// attention_factor. Phi-3-mini-4k windows every layer (sliding_window 2047).
#include <cmath>
#include <sstream>
#include <utility>

#include "models/decoder_family.h"
#include "models/decoder_models.h"
#include "models/phi3_config.h"
#include "models/transformer_model.h"
#include "nn/activation.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rms_norm.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_embedding.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// layers.{i}: input_layernorm, self_attn.qkv_proj, self_attn.o_proj, post_attention_layernorm,
/// mlp.gate_up_proj, mlp.down_proj. No biases.
struct Phi3Layer {
  RmsNorm inputNorm{nullptr}, postNorm{nullptr};
  Linear qkv{nullptr}, o{nullptr}, gateUp{nullptr}, down{nullptr};

  Phi3Layer(torch::nn::Module& root, const std::string& p, const Phi3Config& c) {
    const int64_t C = c.hiddenSize, hd = c.headDim, I = c.intermediateSize;
    inputNorm = addModule(root, p + "input_layernorm", RmsNorm(C, c.rmsNormEps));
    qkv = addModule(root, p + "self_attn.qkv_proj",
                    Linear(C, (c.numHeads + 2 * c.numKvHeads) * hd, false));
    o = addModule(root, p + "self_attn.o_proj", Linear(c.numHeads * hd, C, false));
    postNorm = addModule(root, p + "post_attention_layernorm", RmsNorm(C, c.rmsNormEps));
    gateUp = addModule(root, p + "mlp.gate_up_proj", Linear(C, 2 * I, false));
    down = addModule(root, p + "mlp.down_proj", Linear(I, C, false));
  }
};

/// Phi-3's rotary cos/sin for a run, kept while T, the device and the inference mode stay: the
/// plain RoFormer frequencies, or LongRoPE's.
class Phi3Rotary {
 public:
  explicit Phi3Rotary(const Phi3Config& c) : m_c(c), m_rotary(options(c)) {}

  /// positions: [T] int64 -> cos, sin [T, rotaryDim] float32. sequenceLength: LongRoPE's
  /// length (LayerContext::sequenceLength); 0: the largest position + 1.
  const std::pair<torch::Tensor, torch::Tensor>& cosSin(const torch::Tensor& positions,
                                                        int64_t sequenceLength) {
    // As RotaryCache: one positions tensor per run (and per generation pass).
    if (m_cosSin.first.defined() && m_positions.is_same(positions) &&
        m_cosSin.first.device() == positions.device() &&
        !(m_cosSin.first.is_inference() && !c10::InferenceMode::is_enabled()))
      return m_cosSin;
    m_positions = positions;
    if (!m_c.longRope.enabled) return m_cosSin = m_rotary.cosSin(positions);
    // transformers' longrope_frequency_update: the sequence length is the largest position + 1
    // of the model call; past the original context every frequency takes its long factor, else
    // its short one. Generating with a cache, each step is such a call: the cached keys keep the
    // rotation of the step that made them, so when a generation crosses the original context
    // the earlier keys stay short-factored and the new ones are long-factored, as in
    // transformers (one full forward over the final text would rotate them all long).
    const int64_t seqLen = sequenceLength > 0      ? sequenceLength
                           : positions.numel() > 0 ? positions.max().item<int64_t>() + 1
                                                   : 0;
    const bool longContext = seqLen > m_c.originalMaxPositions;
    const std::vector<double>& f = longContext ? m_c.longRope.longFactor : m_c.longRope.shortFactor;
    const torch::Tensor factors = torch::tensor(f, torch::kDouble).to(torch::kFloat);
    // 1 / (factor · base^(2i/d)): the base frequencies divided by each factor.
    const torch::Tensor inv =
        (m_rotary.inverseFrequencies(seqLen) / factors).to(positions.device());
    const torch::Tensor freqs = torch::outer(positions.to(torch::kFloat), inv);  // [T, rot/2]
    const torch::Tensor emb = torch::cat({freqs, freqs}, -1);                    // [T, rot]
    const double a = m_c.longRope.attentionFactor;
    m_cosSin = {emb.cos() * a, emb.sin() * a};
    m_long = longContext;
    return m_cosSin;
  }

  /// "rope_theta 10000, 24 of 32 dims, longrope (long factors, attention x1.19)", for the trace.
  std::string describe() const {
    std::ostringstream s;
    s << m_rotary.describe(m_c.headDim);
    if (m_c.longRope.enabled)
      s << ", longrope (" << (m_long ? "long" : "short") << " factors, cos/sin x"
        << m_c.longRope.attentionFactor << ")";
    return s.str();
  }

 private:
  static RotaryOptions options(const Phi3Config& c) {
    RotaryOptions o;
    o.rotaryDim = c.rotaryDim;
    o.theta = c.ropeTheta;
    o.maxPositions = c.maxPositions;
    return o;
  }

  const Phi3Config& m_c;
  RotaryEmbedding m_rotary;
  std::pair<torch::Tensor, torch::Tensor> m_cosSin;
  torch::Tensor m_positions;  // the positions m_cosSin is for
  bool m_long = false;
};

class Phi3Family final : public DecoderFamily {
 public:
  explicit Phi3Family(FolderParts parts)
      : DecoderFamily(std::move(parts)),
        m_c(Phi3Config::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_rotary(m_c) {
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embed_tokens", EmbeddingTable(m_c.vocabSize, m_c.hiddenSize));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", m_c);
    m_norm = addModule(root, "norm", RmsNorm(m_c.hiddenSize, m_c.rmsNormEps));
    WeightRules rules;
    rules.family = "Phi-3 model";
    rules.prefixes = {"model."};
    rules.ignoredSuffixes = {"rotary_emb.inv_freq"};
    if (m_c.tieWordEmbeddings) {  // Phi-4-mini
      rules.tied = {{"embed_tokens.weight", "lm_head.weight"}};
      rules.ignoredNames = {"lm_head.weight"};
    } else if (hasTensor("lm_head.weight", "model.")) {
      m_head = addModule(root, "lm_head", Linear(m_c.hiddenSize, m_c.vocabSize, false));
    }  // else a Phi3Model: no language-model head, no predictions
    load(root, rules, m_c.describe());
  }

  bool supportsValueNorms() const override { return true; }
  ModelInfo info() const override {
    ModelInfo i = decoderInfo("phi3", m_c.numLayers, m_c.numHeads, m_c.numKvHeads, m_c.hiddenSize,
                              m_c.maxPositions);
    i.slidingWindow = m_c.slidingWindow;  // every layer: one mask for the whole run
    return i;
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, fused q|k|v, rotated q and k, repeated k/v, merged heads; gate|up,
    // the activated gate and the product.
    const uint64_t attention = static_cast<uint64_t>(m_c.numHeads) * m_c.headDim;
    return 4 * (4ull * m_c.hiddenSize + 6 * attention + 4ull * m_c.intermediateSize);
  }

  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_embed(ids); }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    Phi3Layer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    torch::Tensor h = L.inputNorm(x);
    int s = rec.record("input_layernorm", "self.input_layernorm(x)", "rmsnorm", h, {xStep});
    h = attention(L, h, s, ctx, &s);
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.postNorm(residual);
    s = rec.record("post_attention_layernorm", "self.post_attention_layernorm(x)", "rmsnorm", h,
                   {residualStep});
    h = mlp(L, std::move(h), rec, s, &s);
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
  torch::Tensor attention(Phi3Layer& L, const torch::Tensor& x, int xStep, LayerContext& ctx,
                          int* outStep) {
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads, Hkv = m_c.numKvHeads, hd = m_c.headDim;
    const torch::Tensor qkv = L.qkv(x);
    const int qkvStep = rec.record("qkv_proj", "self.qkv_proj(x)", "linear", qkv, {xStep});
    // [q | k | v] with grouped-query widths H·hd, Hkv·hd, Hkv·hd.
    const std::vector<torch::Tensor> parts = qkv.split_with_sizes({H * hd, Hkv * hd, Hkv * hd}, 2);
    const char* names[3] = {"q", "k", "v"};
    const char* slices[3] = {"qkv[..., :H*hd]", "qkv[..., H*hd:(H+Hkv)*hd]",
                             "qkv[..., (H+Hkv)*hd:]"};
    QkvHeads r;
    torch::Tensor* out[3] = {&r.q, &r.k, &r.v};
    int* steps[3] = {&r.qStep, &r.kStep, &r.vStep};
    for (std::size_t i = 0; i < 3; ++i) {
      const std::string n = names[i];
      const int splitStep = rec.record(n + "_split", slices[i], "split", parts[i], {qkvStep});
      *out[i] = splitHeads(parts[i], i == 0 ? H : Hkv);
      *steps[i] =
          rec.record(n, n + ".view(B, T, -1, hd).transpose(1, 2)", "permute", *out[i], {splitStep});
    }
    const auto& [cos, sin] = m_rotary.cosSin(ctx.positions, ctx.sequenceLength);
    r = rotateAndRepeat(std::move(r), H, cos, sin, m_rotary.describe(), rec);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;  // the sliding window, when configured, is already in it
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(hd));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.o(t); }, "self.o_proj(merged)",
                   [&] { return outputWeightByHead(L.o->weight, H); }};
    tail.valueNorms = ctx.valueNorms;  // v has one head per query head here
    return attentionTail(std::move(r), sdpa, tail, rec, outStep);
  }

  /// Phi3MLP: gate, up = gate_up_proj(x).chunk(2, dim=-1); down_proj(up · act(gate)).
  /// x: [B, T, C] -> [B, T, C].
  torch::Tensor mlp(Phi3Layer& L, torch::Tensor x, TraceRecorder& rec, int inStep, int* outStep) {
    const int64_t I = m_c.intermediateSize;
    torch::Tensor gu = L.gateUp(x);
    x = torch::Tensor();
    const int guStep = rec.record("mlp_gate_up", "self.gate_up_proj(x)", "linear", gu, {inStep});
    const torch::Tensor gate = gu.narrow(-1, 0, I), up = gu.narrow(-1, I, I);  // gate first
    const int gStep =
        rec.record("mlp_gate", "gate, up = gate_up.chunk(2, dim=-1)", "chunk", gate, {guStep});
    const int uStep =
        rec.record("mlp_up", "gate, up = gate_up.chunk(2, dim=-1)", "chunk", up, {guStep});
    torch::Tensor h = activate(m_act, gate);
    const int aStep = rec.record("mlp_act", activationExpression(m_act), "activation", h, {gStep});
    h.mul_(up);
    gu = torch::Tensor();
    const int mStep = rec.record("mlp_gated", "up * act(gate)", "multiply", h, {aStep, uStep});
    h = L.down(h);
    *outStep = rec.record("mlp_out", "self.down_proj(h)", "linear", h, {mStep});
    return h;
  }

  Phi3Config m_c;
  Activation m_act;
  Phi3Rotary m_rotary;
  EmbeddingTable m_embed{nullptr};
  std::vector<Phi3Layer> m_layers;
  RmsNorm m_norm{nullptr};
  Linear m_head{nullptr};
};

}  // namespace

std::shared_ptr<Model> openPhi3Folder(const std::string& folder, const std::string& name) {
  return openPhi3Parts(FolderParts::read(folder), name);
}

std::shared_ptr<Model> openPhi3Parts(FolderParts&& parts, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<Phi3Family>(std::move(parts)), name);
}

}  // namespace attnscope
