// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/transformer_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "nn/attention_mask.h"
#include "nn/state_dict.h"
#include "runtime/stopwatch.h"
#include "runtime/torch_convert.h"
#include "runtime/torch_errors.h"

namespace attnscope {
namespace {

constexpr int kTopPredictions = 5;

/// The whole padded batch as a FloatTensor with the rows of padded queries zeroed.
FloatTensor withoutPadding(const torch::Tensor& t, const std::vector<int>& queryLengths) {
  torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).clone();
  zeroPaddedQueries(c, queryLengths, 0, 1);
  return toFloatTensor(c);
}

// In chunks of a million values, so the check of a mapped model costs megabytes, not a second
// (boolean) copy of its largest tensor.
bool allFinite(const torch::Tensor& t) {
  if (!t.is_floating_point()) return true;
  const torch::Tensor flat = t.reshape({-1});
  constexpr int64_t kChunk = 1 << 20;
  for (int64_t i = 0; i < flat.numel(); i += kChunk) {
    const torch::Tensor part = flat.narrow(0, i, std::min(kChunk, flat.numel() - i));
    if (!torch::isfinite(part).all().item<bool>()) return false;
  }
  return true;
}

// "layer 2, item 1, head 3" of the first non-finite attention weight, or empty.
std::string firstNonFinite(const AttentionGroup& g) {
  const std::vector<float>& a = g.attention.data;
  const auto bad = std::find_if(a.begin(), a.end(), [](float v) { return !std::isfinite(v); });
  if (bad == a.end()) return {};
  const int64_t matrix = static_cast<int64_t>(g.queries()) * g.keys();
  const int64_t at = (bad - a.begin()) / std::max<int64_t>(1, matrix);
  const int64_t heads = g.heads(), batch = g.batch();
  return "layer " + std::to_string(at / (heads * batch)) + ", item " +
         std::to_string((at / heads) % batch + 1) + ", head " + std::to_string(at % heads);
}

}  // namespace

TransformerModel::TransformerModel(std::shared_ptr<TransformerFamily> family, std::string name)
    : m_family(std::move(family)), m_name(std::move(name)) {
  if (m_name.empty()) m_name = m_family->info().name;
}

ModelInfo TransformerModel::info() const {
  ModelInfo i = m_family->info();
  i.name = m_name;
  return i;
}

std::vector<Token> TransformerModel::tokenize(const std::string& text) const {
  return m_family->tokenize(text);
}

std::vector<NamedTensor> TransformerModel::parameters() const {
  std::lock_guard<std::mutex> lock(m_family->mutex());
  return stateDict(m_family->module());
}

uint64_t TransformerModel::estimateBytes(int64_t B, int64_t Tq, int64_t Tk, bool keepScores) const {
  const ModelInfo mi = m_family->info();
  // In doubles: hostile sizes (a million items of a million tokens) must not wrap around to a
  // small number that passes the limit.
  const double layerAttention = static_cast<double>(B) * mi.heads * Tq * Tk * 4;
  const double results = layerAttention * mi.layers * (keepScores ? 2 : 1);
  // One layer's scores while its softmax is written, and a copy on the way off another device.
  const double transient = layerAttention * 2;
  const double activations =
      static_cast<double>(B) * (Tq + Tk) * static_cast<double>(m_family->activationBytesPerToken());
  // The tokens themselves (text, label, ids), and the input and output copied into the result.
  const double tokens = static_cast<double>(B) * (Tq + Tk) * (sizeof(Token) + 16);
  const double total =
      static_cast<double>(mi.parameterBytes) + results + transient + activations + tokens;
  return total >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(total);
}

AttentionResult TransformerModel::run(const RunRequest& request) const {
  return withTorchErrors(m_name, [&] { return runUnguarded(request); });
}

AttentionResult TransformerModel::runUnguarded(const RunRequest& request) const {
  const Stopwatch t0;
  const ModelInfo mi = info();
  m_family->checkRequest(request);
  if (request.keepValueNorms && !m_family->supportsValueNorms())
    throw Error(ErrorKind::InvalidArgument,
                "value-weighted norms are implemented for GPT-2 and the tiny GPT so far; " +
                    mi.name + " (" + mi.kind + ") does not provide them");
  const std::string device = resolveDevice(request.device);
  AttentionResult r;
  r.modelName = m_name;
  r.device = device;
  const auto tokenize = [&](const std::string& s) {
    return request.pair ? m_family->tokenizePair(s, *request.pair) : m_family->tokenize(s);
  };
  if (request.random && request.random->batch > 0 && request.random->seqLen > 0 &&
      request.random->seqLen <= request.limits.maxTokens) {
    // Before the batch exists: a million items of a thousand tokens are gigabytes of tokens alone.
    const int64_t B = request.random->batch, T = request.random->seqLen;
    checkMemory(estimateBytes(B, T, T, request.keepScores), request.limits.memoryLimitBytes,
                m_name + " on random input of " + std::to_string(B) + " x " + std::to_string(T) +
                    " tokens");
  }
  BatchInput batch = request.random ? randomBatch(*request.random, request.limits)
                                    : tokenizeBatch(request, tokenize, mi.maxPositions);
  r.timings.tokenizeMs = t0.ms();

  const int64_t L = mi.layers, B = static_cast<int64_t>(batch.tokens.size()), H = mi.heads;
  const int64_t Tq = batch.maxQuery, Tk = batch.maxKey;
  checkMemory(estimateBytes(B, Tq, Tk, request.keepScores), request.limits.memoryLimitBytes,
              m_name + " on " + std::to_string(B) + " x " + std::to_string(Tq) + " tokens (" +
                  std::to_string(L) + " layers x " + std::to_string(H) + " heads of " +
                  std::to_string(Tq) + " x " + std::to_string(Tk) + " attention)");
  throwIfCancelled(request);

  std::lock_guard<std::mutex> lock(m_family->mutex());
  const Stopwatch t1;
  const torch::Device dev(device);
  torch::nn::Module& module = m_family->module();
  if (!m_nonFiniteWeight) {
    // Once: NaN or Inf weights give NaN attention that looks like masked cells, so every run
    // says which tensor is broken. One pass over the weights, which the run reads anyway.
    torch::NoGradGuard noGrad;
    m_nonFiniteWeight = std::string();
    for (const auto& p : module.named_parameters()) {
      if (!allFinite(p.value())) {
        m_nonFiniteWeight = p.key();
        break;
      }
    }
  }
  {
    // Outside inference mode: moved parameters must stay ordinary tensors for training.
    torch::NoGradGuard noGrad;
    const auto params = module.parameters();
    if (!params.empty() && params.front().device() != dev) module.to(dev);
    module.eval();
  }
  c10::InferenceMode inference;
  const Embedded in = m_family->embed(batch, request, dev);
  r.input = withoutPadding(in.x, batch.queryLengths);
  if (in.context.defined()) r.contextInput = toFloatTensor(in.context);

  MaskOptions maskOptions;
  maskOptions.keyLengths = batch.keyLengths;
  maskOptions.queries = Tq;
  maskOptions.keys = Tk;
  // A causal mask orders a sequence against itself: cross-attention keys come from another
  // sequence, so every query sees all of them.
  maskOptions.causal = mi.causal && !in.context.defined();
  maskOptions.slidingWindow = mi.slidingWindow;
  torch::Tensor mask = buildMask(maskOptions);
  if (mask.defined()) mask = mask.to(dev);
  const torch::Tensor positions =
      torch::arange(Tq, torch::TensorOptions().dtype(torch::kLong).device(dev));

  // On the CPU each layer's softmax (and scores) is written straight into the result: no
  // per-layer copies, no stacking. Elsewhere a device buffer per layer is copied back.
  const bool direct = dev.is_cpu();
  // One attention kind per run so far: self-attention, or cross-attention when keys and values
  // come from a context.
  AttentionGroup& group = r.groups.emplace_back();
  group.name = in.context.defined() ? "cross" : "self";
  group.kvHeads = mi.kvHeadsOrHeads();
  group.attention = FloatTensor({L, B, H, Tq, Tk});
  const torch::Tensor attention = torch::from_blob(group.attention.data.data(), {L, B, H, Tq, Tk});
  torch::Tensor scores;
  if (request.keepScores) {
    group.scores = FloatTensor({L, B, H, Tq, Tk});
    scores = torch::from_blob(group.scores.data.data(), {L, B, H, Tq, Tk});
  }
  torch::Tensor valueNorms;  // [L, B, H, Tk] over the result's buffer
  if (request.keepValueNorms) {
    group.valueNorms = FloatTensor({L, B, H, Tk});
    valueNorms = torch::from_blob(group.valueNorms.data.data(), {L, B, H, Tk});
  }
  const auto deviceBuffer = [&] {
    return torch::empty({B, H, Tq, Tk}, torch::TensorOptions().device(dev));
  };

  torch::Tensor x = in.x;
  for (int64_t l = 0; l < L; ++l) {
    throwIfCancelled(request);
    LayerTrace trace;
    trace.variant = mi.variant;
    TraceRecorder rec(&trace);
    LayerContext ctx;
    ctx.layer = static_cast<int>(l);
    ctx.mask = mask;
    ctx.positions = positions;
    ctx.context = in.context;
    ctx.keyLengths = &batch.keyLengths;
    ctx.rec = &rec;
    ctx.buffers.attention = direct ? attention[l] : deviceBuffer();
    if (scores.defined()) ctx.buffers.scores = direct ? scores[l] : deviceBuffer();
    if (valueNorms.defined()) ctx.valueNorms = torch::zeros({B, H, Tk}, dev);
    x = m_family->layer(static_cast<int>(l), x, ctx);
    if (valueNorms.defined()) {
      valueNorms[l].copy_(ctx.valueNorms);
      // Padded keys carry no token: their norms are 0, like their attention.
      for (int64_t b = 0; b < B; ++b) {
        const int64_t real = batch.keyLengths[static_cast<std::size_t>(b)];
        valueNorms[l][b].narrow(1, real, Tk - real).zero_();
      }
    }
    if (!direct) {
      attention[l].copy_(ctx.buffers.attention);
      if (scores.defined()) scores[l].copy_(ctx.buffers.scores);
    }
    torch::Tensor layerAttention = attention[l];
    zeroPaddedQueries(layerAttention, batch.queryLengths, 0, 2);
    r.traces.push_back(std::move(trace));
  }
  const torch::Tensor hidden = m_family->finalNorm(x);  // [B, Tq, C]
  // Every sentence gets its own candidates (the window shows those of the sentence on screen);
  // one [C] row per item, so this costs B small matmuls, not a [B, T, V] tensor.
  for (int64_t b = 0; b < hidden.size(0); ++b) {
    const torch::Tensor logits = m_family->logits(hidden[b][batch.queryLengths[b] - 1]);
    if (!logits.defined()) break;
    r.nextTokens.push_back(topPredictions(logits, kTopPredictions, *m_family));
  }
  if (!r.nextTokens.empty()) r.nextToken = r.nextTokens.front();
  if (const auto maskId = m_family->maskTokenId()) {
    const std::vector<Token>& first = batch.tokens[0];
    for (std::size_t t = 0; t < first.size(); ++t) {
      if (first[t].id != *maskId) continue;
      const torch::Tensor fill = m_family->maskLogits(hidden[0][static_cast<int64_t>(t)]);
      if (!fill.defined()) {
        r.notices.push_back(mi.name + " has no masked-language-model head: it cannot fill " +
                            first[t].label + " (the checkpoint holds the encoder only)");
        break;
      }
      r.maskFills.push_back(
          {static_cast<int>(t), topPredictions(fill, kTopPredictions, *m_family)});
    }
  }
  for (std::string& n : m_family->notices()) r.notices.push_back(std::move(n));
  if (!m_nonFiniteWeight->empty()) {
    r.notices.push_back("the weights hold NaN or infinite values (first in tensor '" +
                        *m_nonFiniteWeight + "'): attention and predictions are not meaningful");
  }
  if (const std::string where = firstNonFinite(group); !where.empty()) {
    r.notices.push_back("the attention holds NaN or infinite values (first at " + where +
                        "): those cells are not numbers, not masked");
  }
  r.output = withoutPadding(hidden, batch.queryLengths);
  r.timings.forwardMs = t1.ms();
  moveTokensInto(std::move(batch), r);
  r.timings.totalMs = t0.ms();
  return r;
}

std::vector<Prediction> topPredictions(const torch::Tensor& logits, int k,
                                       const TransformerFamily& family) {
  const torch::Tensor probs = torch::softmax(logits.to(torch::kCPU, torch::kFloat), -1);  // [V]
  const auto top = probs.topk(std::min<int64_t>(k, probs.size(0)));
  const torch::Tensor values = std::get<0>(top), indices = std::get<1>(top);
  std::vector<Prediction> out;
  for (int64_t i = 0; i < values.size(0); ++i) {
    Prediction p;
    p.token = family.vocabularyToken(indices[i].item<int64_t>());
    p.probability = values[i].item<float>();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace attnscope
