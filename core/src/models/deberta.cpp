// SPDX-License-Identifier: GPL-3.0-or-later
// DeBERTa v1, v2 and v3 (Hugging Face's DebertaModel / DebertaForMaskedLM, model_type "deberta",
// and DebertaV2Model / DebertaV2ForMaskedLM, "deberta-v2"): BERT's post-norm layers with
// disentangled attention. Each score is the sum of
// three terms, each divided by sqrt(head_dim * scale_factor): content to content (q_i · k_j),
// content to position (c2p: q_i · Kr[δ(i, j)]) and position to content (p2c: k_j · Qr[δ(j, i)],
// gathered on the keys' side and transposed), where Kr and Qr are the relative-position
// embeddings projected by the attention's own (share_att_key) or separate key and query
// projections and δ the relative distance, log-bucketed (position_buckets) and clamped to the
// table. A run can keep the three terms (RunRequest::keepScoreTerms). v1 differs only in the
// projections: one in_proj without bias whose rows are per head [q_h k_h v_h] (transformers'
// view(B, T, H, -1).chunk(3, -1)), q_bias and v_bias added after it, pos_proj (no bias) and
// pos_q_proj for the relative terms, no log buckets, and a scale_factor of 1 + len(pos_att_type).
// v2-xlarge's ConvLayer (conv_kernel_size > 0) adds, after layer 0, a Conv1d over the layer's
// input (the embeddings) to its output: LayerNorm(out + act(conv(x) masked)), masked.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/error.h"
#include "models/bert.h"
#include "models/deberta_config.h"
#include "models/encoder_family.h"
#include "models/transformer_model.h"
#include "nn/activation.h"
#include "nn/attention_tail.h"
#include "nn/compute_weight.h"
#include "nn/head_value_norms.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module_path.h"
#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {
namespace {

/// encoder.layer.{i}: attention.self.{query,key,value}_proj (+ pos_key_proj, pos_query_proj
/// without share_att_key) or, in v1, attention.self.{in_proj, q_bias, v_bias} (+ pos_proj,
/// pos_q_proj); attention.output.{dense,LayerNorm}, intermediate.dense, output.{dense,LayerNorm}.
struct DebertaLayer {
  Linear q{nullptr}, k{nullptr}, v{nullptr}, posKey{nullptr}, posQuery{nullptr};
  Linear inProj{nullptr};  // v1
  torch::Tensor qBias, vBias;
  Linear o{nullptr}, up{nullptr}, down{nullptr};
  LayerNorm attnNorm{nullptr}, outNorm{nullptr};

  DebertaLayer(torch::nn::Module& root, const std::string& p, const DebertaConfig& c) {
    const int64_t C = c.hiddenSize, I = c.intermediateSize;
    const std::string a = p + "attention.self.";
    if (c.v1()) {
      inProj = addModule(root, a + "in_proj", Linear(C, 3 * C, false));
      qBias = addParameter(root, a + "q_bias", torch::empty({C}));
      vBias = addParameter(root, a + "v_bias", torch::empty({C}));
      if (c.hasC2p()) posKey = addModule(root, a + "pos_proj", Linear(C, C, false));
      if (c.hasP2c()) posQuery = addModule(root, a + "pos_q_proj", Linear(C, C));
    } else {
      q = addModule(root, a + "query_proj", Linear(C, C));
      k = addModule(root, a + "key_proj", Linear(C, C));
      v = addModule(root, a + "value_proj", Linear(C, C));
      if (!c.shareAttKey && c.hasC2p()) posKey = addModule(root, a + "pos_key_proj", Linear(C, C));
      if (!c.shareAttKey && c.hasP2c())
        posQuery = addModule(root, a + "pos_query_proj", Linear(C, C));
    }
    o = addModule(root, p + "attention.output.dense", Linear(C, C));
    attnNorm = addModule(root, p + "attention.output.LayerNorm", LayerNorm(C, c.layerNormEps));
    up = addModule(root, p + "intermediate.dense", Linear(C, I));
    down = addModule(root, p + "output.dense", Linear(I, C));
    outNorm = addModule(root, p + "output.LayerNorm", LayerNorm(C, c.layerNormEps));
  }
};

/// build_relative_position with make_log_bucket_position, as transformers computes it (float32
/// log, ceil, the sign put back): [T, T] int64 on `device`, entry [i, j] the bucket of i - j.
torch::Tensor debertaRelativePositions(int64_t T, int buckets, int maxPosition,
                                       const torch::Device& device) {
  const auto ids = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(device));
  torch::Tensor rel = ids.unsqueeze(1) - ids.unsqueeze(0);
  if (buckets <= 0 || maxPosition <= 0) return rel;
  const int64_t mid = buckets / 2;
  const torch::Tensor sign = torch::sign(rel);
  const torch::Tensor absPos =
      torch::where((rel < mid) & (rel > -mid), torch::full_like(rel, mid - 1), torch::abs(rel));
  // abs_pos / mid is a true division (float32); torch.tensor((max_position - 1) / mid) float32.
  const torch::Tensor base =
      torch::full({}, static_cast<double>(maxPosition - 1) / mid,
                  torch::TensorOptions().dtype(torch::kFloat).device(device));
  const torch::Tensor logPos =
      torch::ceil(torch::log(absPos.to(torch::kFloat) / static_cast<double>(mid)) /
                  torch::log(base) * static_cast<double>(mid - 1)) +
      static_cast<double>(mid);
  return torch::where(absPos <= mid, rel.to(torch::kFloat), logPos * sign.to(torch::kFloat))
      .to(torch::kLong);
}

class DebertaFamily final : public EncoderFamily {
 public:
  explicit DebertaFamily(const std::string& folder)
      : EncoderFamily(folder),
        m_c(DebertaConfig::fromReader(m_config)),
        m_act(parseActivation(m_c.hiddenAct, m_config.source() + ": hidden_act")),
        m_convAct(parseActivation(m_c.convAct, m_config.source() + ": conv_act")) {
    const int64_t C = m_c.hiddenSize, E = m_c.embeddingSize, V = m_c.vocabSize;
    const double eps = m_c.layerNormEps;
    torch::nn::Module& root = rootForVocabulary(m_c.vocabSize);
    m_word = addModule(root, "embeddings.word_embeddings", EmbeddingTable(V, E));
    if (m_c.positionBiasedInput)
      m_position =
          addModule(root, "embeddings.position_embeddings", EmbeddingTable(m_c.maxPositions, E));
    if (m_c.typeVocabSize > 0)
      m_type =
          addModule(root, "embeddings.token_type_embeddings", EmbeddingTable(m_c.typeVocabSize, E));
    if (E != C) m_project = addModule(root, "embeddings.embed_proj", Linear(E, C, false));
    m_embedNorm = addModule(root, "embeddings.LayerNorm", LayerNorm(C, eps));
    if (m_c.relativeAttention)
      m_rel = addModule(root, "encoder.rel_embeddings", EmbeddingTable(2 * m_c.span(), C));
    if (m_c.relEmbeddingNorm) m_relNorm = addModule(root, "encoder.LayerNorm", LayerNorm(C, eps));
    for (int l = 0; l < m_c.numLayers; ++l)
      m_layers.emplace_back(root, "encoder.layer." + std::to_string(l) + ".", m_c);
    if (m_c.convKernelSize > 0) {  // ConvLayer: Conv1d(C, C, k, groups), LayerNorm
      if (!activationParameters(m_convAct).empty())  // transformers would draw it on every call
        throw Error(ErrorKind::Format, m_config.source() + ": \"conv_act\" \"" + m_c.convAct +
                                           "\" (a learned activation) is not supported");
      m_convWeight = addParameter(root, "encoder.conv.conv.weight",
                                  torch::empty({C, C / m_c.convGroups, m_c.convKernelSize}));
      m_convBias = addParameter(root, "encoder.conv.conv.bias", torch::empty({C}));
      m_convNorm = addModule(root, "encoder.conv.LayerNorm", LayerNorm(C, eps));
    }
    // The masked-LM head: DebertaV2OnlyMLMHead (lm_predictions.lm_head: dense C -> C, LayerNorm,
    // bias; the word embeddings as decoder) as Microsoft's checkpoints store it, or the legacy
    // BERT-style one (cls.predictions: transform.dense C -> E, transform.LayerNorm, bias, a
    // decoder tied to the word embeddings).
    if (hasTensor("lm_predictions.lm_head.bias", "deberta.") && E == C) {
      m_headDense = addModule(root, "lm_predictions.lm_head.dense", Linear(C, C));
      m_headNorm = addModule(root, "lm_predictions.lm_head.LayerNorm", LayerNorm(C, eps));
      m_headBias = addParameter(root, "lm_predictions.lm_head.bias", torch::empty({V}));
    } else if (hasTensor("cls.predictions.bias", "deberta.")) {
      m_headDense = addModule(root, "cls.predictions.transform.dense", Linear(C, E));
      m_headNorm = addModule(root, "cls.predictions.transform.LayerNorm", LayerNorm(E, eps));
      m_headBias = addParameter(root, "cls.predictions.bias", torch::empty({V}));
    }
    WeightRules rules;
    rules.family = m_c.v1() ? "DeBERTa" : "DeBERTa-v2";
    rules.prefixes = {"deberta."};
    // Tied to the word embeddings (and the head's bias); position_embeddings of a checkpoint
    // that does not add them (transformers ignores them too).
    rules.ignoredNames = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"};
    if (!m_c.positionBiasedInput)
      rules.ignoredNames.push_back("embeddings.position_embeddings.weight");
    load(root, rules, m_c.describe());
  }

  ModelInfo info() const override {
    ModelInfo i = encoderInfo(m_c.v1() ? "deberta" : "deberta-v2", m_c.numLayers, m_c.numHeads,
                              m_c.hiddenSize, m_c.positionBiasedInput ? m_c.maxPositions : 0);
    if (!m_headDense) i.maskToken.clear();
    i.scoreTerms = {"c2c"};
    if (m_c.hasC2p()) i.scoreTerms.push_back("c2p");
    if (m_c.hasP2c()) i.scoreTerms.push_back("p2c");
    return i;
  }

  uint64_t activationBytesPerToken() const override {
    // Residual, q, k, v, merged heads, output; the intermediate; and per token of the relative
    // terms the [H, T, 2 span] products before their gathers (counted per query against the
    // span).
    const uint64_t C = static_cast<uint64_t>(m_c.hiddenSize);
    const uint64_t rel =
        m_c.relativeAttention ? 2ull * static_cast<uint64_t>(m_c.numHeads) * 2 * m_c.span() : 0;
    return 4 * (6 * C + static_cast<uint64_t>(m_c.intermediateSize) + rel);
  }

  Embedded embed(const BatchInput& batch, const RunRequest& request,
                 const torch::Device& device) override {
    Embedded e = EncoderFamily::embed(batch, request, device);
    // DebertaV2Embeddings multiplies by the attention mask: padded positions start at 0.
    bool padded = false;
    for (const int n : batch.queryLengths) padded = padded || n < batch.maxQuery;
    if (padded) {
      torch::Tensor keep = torch::zeros({e.x.size(0), e.x.size(1), 1});
      for (std::size_t b = 0; b < batch.queryLengths.size(); ++b)
        keep[static_cast<int64_t>(b)].narrow(0, 0, batch.queryLengths[b]).fill_(1.0f);
      e.x = e.x * keep.to(e.x.device());
    }
    return e;
  }

  torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) override {
    torch::Tensor x = m_word(ids);
    if (m_position) {
      const torch::Tensor positions = torch::arange(ids.size(1), ids.options());
      x = x + m_position(positions).unsqueeze(0);
    }
    if (m_type) x = x + m_type(typeIds);
    if (m_project) x = m_project(x);
    return m_embedNorm(x);
  }

  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    DebertaLayer& L = m_layers[static_cast<std::size_t>(index)];
    TraceRecorder& rec = *ctx.rec;
    const std::string p = "self.attention.self.";
    const int64_t H = m_c.numHeads;
    const int xStep = rec.record("x", "x", "input", x);
    QkvHeads qkv =
        m_c.v1() ? fusedProjection(L, x, rec, xStep) : separateProjections(L, x, rec, xStep);
    torch::Tensor q = std::move(qkv.q), k = std::move(qkv.k), v = std::move(qkv.v);
    const int qStep = qkv.qStep, kStep = qkv.kStep, vStep = qkv.vStep;
    // scale_factor counts c2p and p2c in pos_att_type; every term is divided by the same scale.
    const double scale = 1.0 / std::sqrt(static_cast<double>(m_c.headDim()) *
                                         static_cast<double>(m_c.scaleFactor()));
    const std::string scaleText = "1 / math.sqrt(hd * " + std::to_string(m_c.scaleFactor()) + ")";
    torch::Tensor c2p, p2c;
    if (m_c.hasC2p() || m_c.hasP2c()) {
      const int64_t T = x.size(1), S = m_c.span();
      int relStep = -1;
      const torch::Tensor rel = relativeEmbeddings(rec, &relStep);
      const torch::Tensor relPos =
          debertaRelativePositions(T, m_c.positionBuckets, m_c.maxRelativePositions, x.device());
      if (m_c.hasC2p()) {
        Linear& proj = m_c.shareAttKey ? L.k : L.posKey;
        const std::string name = m_c.shareAttKey ? "key_proj"
                                 : m_c.v1()      ? "pos_proj"
                                                 : "pos_key_proj";
        const torch::Tensor posKey = splitHeads(proj(rel.unsqueeze(0)), H);  // [1, H, 2S, hd]
        const int pk =
            rec.record("pos_key", p + name + "(rel_embeddings)", "linear", posKey, {relStep});
        const torch::Tensor att = torch::matmul(q, posKey.transpose(-1, -2));  // [B, H, T, 2S]
        const int m =
            rec.record("c2p_att", "q @ pos_key.transpose(-1, -2)", "matmul", att, {qStep, pk});
        const torch::Tensor index =
            torch::clamp(relPos + S, 0, 2 * S - 1).expand({att.size(0), att.size(1), T, T});
        c2p = torch::gather(att, -1, index).mul_(scale);
        rec.record("c2p", "att.gather(-1, clamp(relative_pos + span, 0, 2 * span - 1)) / scale",
                   "position_bias", c2p, {m});
      }
      if (m_c.hasP2c()) {
        Linear& proj = m_c.shareAttKey ? L.q : L.posQuery;
        const std::string name = m_c.shareAttKey ? "query_proj"
                                 : m_c.v1()      ? "pos_q_proj"
                                                 : "pos_query_proj";
        const torch::Tensor posQuery = splitHeads(proj(rel.unsqueeze(0)), H);
        const int pq =
            rec.record("pos_query", p + name + "(rel_embeddings)", "linear", posQuery, {relStep});
        const torch::Tensor att = torch::matmul(k, posQuery.transpose(-1, -2));  // [B, H, Tk, 2S]
        const int m =
            rec.record("p2c_att", "k @ pos_query.transpose(-1, -2)", "matmul", att, {kStep, pq});
        const torch::Tensor index =
            torch::clamp(-relPos + S, 0, 2 * S - 1).expand({att.size(0), att.size(1), T, T});
        p2c = torch::gather(att, -1, index).transpose(-1, -2).mul(scale);
        rec.record("p2c", "att.gather(-1, clamp(-relative_pos + span, 0, 2 * span - 1)).mT / scale",
                   "position_bias", p2c, {m});
      }
    }
    if (!ctx.scoreTerms.empty()) {
      // The terms as the scores sum them: c2c, then c2p and p2c where the model has them.
      ctx.scoreTerms[0].copy_(torch::matmul(q, k.transpose(-1, -2)).mul_(scale));
      std::size_t t = 1;
      if (c2p.defined()) ctx.scoreTerms[t++].copy_(c2p);
      if (p2c.defined()) ctx.scoreTerms[t++].copy_(p2c);
    }
    SdpaOptions sdpa;
    sdpa.mask = ctx.mask;
    sdpa.scale = scale;
    sdpa.scaleText = scaleText;
    if (c2p.defined() && p2c.defined())
      sdpa.bias = c2p.add_(p2c);
    else
      sdpa.bias = c2p.defined() ? c2p : p2c;
    if (sdpa.bias.defined())
      sdpa.biasText = m_c.hasC2p() && m_c.hasP2c() ? "c2p + p2c" : m_c.hasC2p() ? "c2p" : "p2c";
    sdpa.buffers = ctx.buffers;
    AttentionTail tail;
    tail.output = {[&](const torch::Tensor& t) { return L.o(t); },
                   "self.attention.output.dense(merged)",
                   [&] { return outputWeightByHead(L.o->weight, H); }};
    tail.mergeExpression = "values.transpose(1, 2).reshape(B, T, C)";
    tail.valueNorms = ctx.valueNorms;
    int s = -1;
    torch::Tensor h = attentionTail({std::move(q), std::move(k), std::move(v), qStep, kStep, vStep},
                                    sdpa, tail, rec, &s);
    h = h.add_(x);
    const int r1 = rec.record("residual_1", "attn_out + x", "add", h, {s, xStep});
    h = L.attnNorm(h);
    const int n1 = rec.record("norm_1", "self.attention.output.LayerNorm(x)", "layernorm", h, {r1});
    const MlpProjection up{[&](const torch::Tensor&t) { return L.up(t); },
                           "self.intermediate.dense(x)"},
        down{[&](const torch::Tensor&t) { return L.down(t); }, "self.output.dense(h)"};
    int mlpStep = -1;
    torch::Tensor f = feedForward(h, up, m_act, down, nullptr, rec, n1, &mlpStep);
    f = f.add_(h);
    const int r2 = rec.record("residual_2", "mlp_out + x", "add", f, {mlpStep, n1});
    f = L.outNorm(f);
    const int n2 = rec.record("norm_2", "self.output.LayerNorm(x)", "layernorm", f, {r2});
    if (index == 0 && m_convWeight.defined()) f = convLayer(x, f, ctx, xStep, n2);
    return f;
  }

  torch::Tensor maskLogits(const torch::Tensor& hidden) override {
    if (!m_headDense) return {};
    const torch::Tensor h = m_headNorm(activate(m_act, m_headDense(hidden)));
    return torch::matmul(h, computeWeight(m_word->weight).t()) + computeWeight(m_headBias);
  }

 private:
  /// v2: query_proj, key_proj and value_proj, each split into heads.
  QkvHeads separateProjections(DebertaLayer& L, const torch::Tensor& x, TraceRecorder& rec,
                               int xStep) {
    const std::string p = "self.attention.self.";
    const int64_t H = m_c.numHeads;
    QkvHeads r;
    r.q = L.q(x);
    r.k = L.k(x);
    r.v = L.v(x);
    const int qLin = rec.record("q_proj", p + "query_proj(x)", "linear", r.q, {xStep});
    const int kLin = rec.record("k_proj", p + "key_proj(x)", "linear", r.k, {xStep});
    const int vLin = rec.record("v_proj", p + "value_proj(x)", "linear", r.v, {xStep});
    r.q = splitHeads(r.q, H);
    r.k = splitHeads(r.k, H);
    r.v = splitHeads(r.v, H);
    r.qStep = rec.record("q", "q.view(B, T, H, hd).transpose(1, 2)", "permute", r.q, {qLin});
    r.kStep = rec.record("k", "k.view(B, T, H, hd).transpose(1, 2)", "permute", r.k, {kLin});
    r.vStep = rec.record("v", "v.view(B, T, H, hd).transpose(1, 2)", "permute", r.v, {vLin});
    return r;
  }

  /// v1: in_proj(x) viewed as [B, T, H, 3 hd] and chunked into q, k, v per head (each head's
  /// rows of in_proj are its q, k and v), then q + q_bias and v + v_bias (split into heads).
  QkvHeads fusedProjection(DebertaLayer& L, const torch::Tensor& x, TraceRecorder& rec, int xStep) {
    const std::string p = "self.attention.self.";
    const int64_t H = m_c.numHeads, C = m_c.hiddenSize;
    const torch::Tensor qkv = L.inProj(x);
    const int lin = rec.record("qkv_proj", p + "in_proj(x)", "linear", qkv, {xStep});
    QkvHeads r = splitFusedQkv(qkv, QkvLayout::InterleavedPerHead, H, rec, lin);
    r.q = r.q + splitHeads(computeWeight(L.qBias).view({1, 1, C}), H);
    r.qStep = rec.record("q_bias", "q + transpose_for_scores(self.q_bias)", "add", r.q, {r.qStep});
    r.v = r.v + splitHeads(computeWeight(L.vBias).view({1, 1, C}), H);
    r.vStep = rec.record("v_bias", "v + transpose_for_scores(self.v_bias)", "add", r.v, {r.vStep});
    return r;
  }

  /// DeBERTa-v2's ConvLayer after layer 0: out = conv(x) over the layer's input x (the
  /// embeddings), zeroed on padding, act(out); LayerNorm(layer output + out), zeroed on padding.
  torch::Tensor convLayer(const torch::Tensor& x, const torch::Tensor& layerOut, LayerContext& ctx,
                          int xStep, int outStep) {
    TraceRecorder& rec = *ctx.rec;
    const int64_t B = x.size(0), T = x.size(1);
    torch::Tensor out =
        torch::conv1d(x.transpose(1, 2), computeWeight(m_convWeight), computeWeight(m_convBias),
                      /*stride=*/1,
                      /*padding=*/(m_c.convKernelSize - 1) / 2, /*dilation=*/1, m_c.convGroups)
            .transpose(1, 2);
    int s = rec.record("conv", "self.encoder.conv.conv(x.permute(0, 2, 1)).permute(0, 2, 1)",
                       "conv1d", out, {xStep});
    // The items' real tokens: [B, T, 1], 1 before each item's length.
    std::vector<int64_t> lengths(static_cast<std::size_t>(B), T);
    if (ctx.keyLengths != nullptr && ctx.keyLengths->size() == lengths.size())
      for (std::size_t b = 0; b < lengths.size(); ++b) lengths[b] = (*ctx.keyLengths)[b];
    const torch::Tensor keep =
        (torch::arange(T, torch::TensorOptions().dtype(torch::kLong)).unsqueeze(0) <
         torch::tensor(lengths).unsqueeze(1))
            .unsqueeze(-1)
            .to(x.device());
    out = activate(m_convAct, out.masked_fill(keep.logical_not(), 0.0));
    s = rec.record("conv_act", activationExpression(m_convAct), "activation", out, {s});
    // Out of place: the ablation estimate differentiates through here (tanh's backward reads
    // its output).
    torch::Tensor h = out + layerOut;
    s = rec.record("conv_residual", "layer_output + conv", "add", h, {s, outStep});
    h = m_convNorm(h) * keep.to(h.dtype());
    rec.record("conv_norm", "self.encoder.conv.LayerNorm(x) * mask", "layernorm", h, {s});
    return h;
  }

  /// encoder.rel_embeddings.weight, through encoder.LayerNorm when norm_rel_ebd says so:
  /// [2 span, C] float32.
  torch::Tensor relativeEmbeddings(TraceRecorder& rec, int* step) {
    torch::Tensor rel = computeWeight(m_rel->weight);
    *step = rec.record("rel_embeddings", "self.rel_embeddings.weight", "embedding", rel);
    if (m_relNorm) {
      rel = m_relNorm(rel);
      *step = rec.record("rel_norm", "self.encoder.LayerNorm(rel_embeddings)", "layernorm", rel,
                         {*step});
    }
    return rel;
  }

  DebertaConfig m_c;
  Activation m_act, m_convAct;
  EmbeddingTable m_word{nullptr}, m_position{nullptr}, m_type{nullptr}, m_rel{nullptr};
  Linear m_project{nullptr}, m_headDense{nullptr};
  LayerNorm m_embedNorm{nullptr}, m_relNorm{nullptr}, m_headNorm{nullptr};
  torch::Tensor m_headBias, m_convWeight, m_convBias;
  LayerNorm m_convNorm{nullptr};
  std::vector<DebertaLayer> m_layers;  // encoder.layer.{i}
};

}  // namespace

std::shared_ptr<Model> openDebertaFolder(const std::string& folder, const std::string& name) {
  return std::make_shared<TransformerModel>(std::make_shared<DebertaFamily>(folder), name);
}

}  // namespace attnscope
