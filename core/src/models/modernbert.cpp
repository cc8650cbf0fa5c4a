// SPDX-License-Identifier: GPL-3.0-or-later
// ModernBERT (Hugging Face's ModernBertModel / ModernBertForMaskedLM, model_type modernbert): a
// pre-LayerNorm encoder without biases by default. The embeddings are tok_embeddings then a
// LayerNorm (no positions: rotary in every layer); each layer is attn_norm (none on layer 0: the
// embeddings' norm stands for it), a fused Wqkv ([q | k | v]), rotary with global_rope_theta on
// the global layers and local_rope_theta on the local ones, attention, Wo; then mlp_norm and a
// GeGLU MLP: input, gate = Wi(x).chunk(2), Wo(act(input) · gate). Every
// global_attn_every_n_layers-th layer (0, n, 2n, ...) attends globally; the others attend within a
// two-sided window, |i - j| <= local_attention // 2. final_norm closes the stack; the masked-LM
// head is head.dense, classifier_activation, head.norm, then the decoder tied to tok_embeddings
// (with decoder.bias when decoder_bias).
#include <cmath>
#include <utility>
#include <vector>

#include "models/bert.h"
#include "models/encoder_family.h"
#include "models/modernbert_config.h"
#include "models/transformer_model.h"
#include "nn/activation.h"
#include "nn/attention_mask.h"
#include "nn/attention_tail.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/rotary_attention.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// layers.{i}: attn_norm (not on layer 0), attn.Wqkv, attn.Wo, mlp_norm, mlp.Wi, mlp.Wo.
struct ModernBertLayer {
  LayerNorm attnNorm{nullptr}, mlpNorm{nullptr};
  Linear qkv{nullptr}, o{nullptr}, wi{nullptr}, wo{nullptr};

  ModernBertLayer(torch::nn::Module& root, const std::string& p, int index,
                  const ModernBertConfig& c) {
    const int64_t C = c.hiddenSize, I = c.intermediateSize;
    const double eps = c.normEps;
    if (index > 0) attnNorm = addModule(root, p + "attn_norm", LayerNorm(C, eps, true, c.normBias));
    qkv = addModule(root, p + "attn.Wqkv", Linear(C, 3 * C, c.attentionBias));
    o = addModule(root, p + "attn.Wo", Linear(C, C, c.attentionBias));
    mlpNorm = addModule(root, p + "mlp_norm", LayerNorm(C, eps, true, c.normBias));
    wi = addModule(root, p + "mlp.Wi", Linear(C, 2 * I, c.mlpBias));
    wo = addModule(root, p + "mlp.Wo", Linear(I, C, c.mlpBias));
  }
};

RotaryOptions rotaryOf(const ModernBertConfig& c, double theta) {
  RotaryOptions o;
  o.rotaryDim = c.headDim();
  o.theta = theta;
  o.maxPositions = c.maxPositions;
  return o;
}

class ModernBertFamily final : public EncoderFamily {
 public:
  explicit ModernBertFamily(const std::string& folder)
      : EncoderFamily(folder),
        m_c(ModernBertConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_activation")),
        m_headAct(
            parseActivation(m_c.classifierAct, m_config.source() + ": classifier_activation")),
        m_global(rotaryOf(m_c, m_c.globalRopeTheta)),
        m_local(rotaryOf(m_c, m_c.localRopeTheta)) {
    const int64_t C = m_c.hiddenSize, V = m_c.vocabSize;
    const double eps = m_c.normEps;
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_embed = addModule(root, "embeddings.tok_embeddings", EmbeddingTable(V, C));
    m_embedNorm = addModule(root, "embeddings.norm", LayerNorm(C, eps, true, m_c.normBias));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "layers." + std::to_string(l) + ".", l, m_c);
    m_finalNorm = addModule(root, "final_norm", LayerNorm(C, eps, true, m_c.normBias));
    WeightRules rules;
    rules.family = "ModernBERT";
    rules.prefixes = {"model."};  // ModernBertForMaskedLM; a ModernBertModel saves none
    // The masked-language-model head, when the checkpoint has one (not a ModernBertModel's).
    if (hasTensor("head.dense.weight", "model.")) {
      m_headDense = addModule(root, "head.dense", Linear(C, C, m_c.classifierBias));
      m_headNorm = addModule(root, "head.norm", LayerNorm(C, eps, true, m_c.normBias));
      if (m_c.tieWordEmbeddings) {
        if (m_c.decoderBias) m_decoderBias = addParameter(root, "decoder.bias", torch::empty({V}));
        rules.ignoredNames = {"decoder.weight"};  // tied to the token embeddings
      } else {
        m_decoder = addModule(root, "decoder", Linear(C, V, m_c.decoderBias));
      }
    }
    load(root, rules, m_c.describe());
  }

  ModelInfo info() const override {
    ModelInfo i =
        encoderInfo("modernbert", m_c.numLayers, m_c.numHeads, m_c.hiddenSize, m_c.maxPositions);
    if (!m_headDense) i.maskToken.clear();
    // Local and global layers: each local layer builds its own two-sided window (layer()); an
    // encoder's window w lets query i see keys |i - j| <= w / 2.
    for (int l = 0; l < m_c.numLayers; ++l)
      i.layerWindows.push_back(m_c.windowed(l) ? m_c.localAttention : 0);
    return i;
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, normed copy, fused q|k|v, rotated q and k, merged heads; Wi's input|gate, the
    // activated input and the product.
    return 4 * (4ull * m_c.hiddenSize + 6ull * m_c.hiddenSize + 4ull * m_c.intermediateSize);
  }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor&) override {
    return m_embedNorm(m_embed(ids));  // no token types, no learned positions
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    ModernBertLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const int xStep = rec.record("x", "x", "input", x);
    int s = xStep;
    torch::Tensor h = x;
    if (L.attnNorm) {  // layer 0's attn_norm is nn.Identity()
      h = L.attnNorm(x);
      s = rec.record("attn_norm", "self.attn_norm(x)", "layernorm", h, {xStep});
    }
    h = attention(L, index, h, s, ctx, &s);
    const torch::Tensor residual = h.add_(x);  // x belongs to the caller's loop
    const int residualStep = rec.record("residual_1", "x + attn_out", "add", residual, {xStep, s});
    h = L.mlpNorm(residual);
    s = rec.record("mlp_norm", "self.mlp_norm(x)", "layernorm", h, {residualStep});
    h = mlp(L, std::move(h), rec, s, &s);
    h.add_(residual);
    rec.record("residual_2", "x + mlp_out", "add", h, {residualStep, s});
    return h;
  }

  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_finalNorm(x); }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_headAct, m_headDense(hidden)));
    if (m_decoder) return m_decoder(h);
    return linearForward(h, m_embed->weight, m_decoderBias);
  }

 private:
  /// x: [B, T, C] normed (trace step xStep) -> the Wo output [B, T, C].
  torch::Tensor attention(ModernBertLayer& L, int index, const torch::Tensor& x, int xStep,
                          LayerContext& ctx, int* outStep) {
    TraceRecorder& rec = *ctx.rec;
    const int64_t H = m_c.numHeads;
    const bool local = m_c.windowed(index);
    const torch::Tensor qkv = L.qkv(x);
    const int qkvStep = rec.record("Wqkv", "self.attn.Wqkv(x)", "linear", qkv, {xStep});
    QkvHeads r = splitFusedQkv(qkv, QkvLayout::Split, H, rec, qkvStep);
    RotaryCache& rotary = local ? m_local : m_global;
    const auto& [cos, sin] = rotary.cosSin(ctx.positions);
    r = rotateAndRepeat(std::move(r), H, cos, sin, rotary.rotary().describe(m_c.headDim()), rec);
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    if (local) {
      sdpa.mask = windowMask(ctx, x.size(1));
      sdpa.maskText =
          "scaled + mask (local window |i - j| <= " + std::to_string(m_c.windowRadius()) + ")";
    }
    sdpa.scale = 1.0 / std::sqrt(static_cast<double>(m_c.headDim()));
    sdpa.scaleText = "head_dim**-0.5";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.o(t); }, "self.attn.Wo(merged)",
                   [&] { return outputWeightByHead(L.o->weight, H); }};
    tail.valueNorms = ctx.valueNorms;
    return attentionTail(std::move(r), sdpa, tail, rec, outStep);
  }

  /// The padding of ctx.mask and the two-sided window of a local layer, [B, 1, T, T] on the
  /// device (undefined when nothing is masked). Built once per run and shared by its local layers
  /// (its tensor, where a path makes one, is 256 MB at T = 8192): rebuilt when the lengths, T, the
  /// device or the inference mode change (a tensor made in inference mode cannot be used
  /// outside it).
  const AttentionMask& windowMask(const LayerContext& ctx, int64_t T) {
    const torch::Device device = ctx.positions.device();
    const bool inference = c10::InferenceMode::is_enabled();
    if (m_windowT != T || m_windowLengths != *ctx.keyLengths || m_windowDevice != device ||
        m_windowInference != inference) {
      MaskOptions o;
      o.keyLengths = *ctx.keyLengths;
      o.queries = o.keys = T;
      o.windowRadius = m_c.windowRadius();
      m_window = buildMask(o).to(device);
      m_windowInference = inference;
      m_windowT = T;
      m_windowLengths = *ctx.keyLengths;
      m_windowDevice = device;
    }
    return m_window;
  }

  /// ModernBertMLP: input, gate = Wi(x).chunk(2, dim=-1); Wo(act(input) · gate).
  /// x: [B, T, C] -> [B, T, C].
  torch::Tensor mlp(ModernBertLayer& L, torch::Tensor x, TraceRecorder& rec, int inStep,
                    int* outStep) {
    const int64_t I = m_c.intermediateSize;
    torch::Tensor ig = L.wi(x);
    x = torch::Tensor();
    const int wiStep = rec.record("mlp_Wi", "self.mlp.Wi(x)", "linear", ig, {inStep});
    const torch::Tensor input = ig.narrow(-1, 0, I), gate = ig.narrow(-1, I, I);  // input first
    const int iStep =
        rec.record("mlp_input", "input, gate = Wi.chunk(2, dim=-1)", "chunk", input, {wiStep});
    const int gStep =
        rec.record("mlp_gate", "input, gate = Wi.chunk(2, dim=-1)", "chunk", gate, {wiStep});
    torch::Tensor h = activate(m_act, input);
    const int aStep = rec.record("mlp_act", activationExpression(m_act), "activation", h, {iStep});
    h.mul_(gate);
    ig = torch::Tensor();
    const int mStep = rec.record("mlp_gated", "act(input) * gate", "multiply", h, {aStep, gStep});
    h = L.wo(h);
    *outStep = rec.record("mlp_out", "self.mlp.Wo(h)", "linear", h, {mStep});
    return h;
  }

  ModernBertConfig m_c;
  Activation m_act, m_headAct;
  RotaryCache m_global, m_local;
  EmbeddingTable m_embed{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_finalNorm{nullptr}, m_headNorm{nullptr};
  std::vector<ModernBertLayer> m_layers;
  Linear m_headDense{nullptr}, m_decoder{nullptr};
  torch::Tensor m_decoderBias;
  AttentionMask m_window;  // windowMask's, for m_windowLengths at T = m_windowT on m_windowDevice
  bool m_windowInference = false;  // made in inference mode
  std::vector<int> m_windowLengths;
  int64_t m_windowT = -1;
  torch::Device m_windowDevice = torch::kCPU;
};

}  // namespace

std::shared_ptr<Model> openModernBertFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<ModernBertFamily>(folder), name);
}

}  // namespace attnscope
