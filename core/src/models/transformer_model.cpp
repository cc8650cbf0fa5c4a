// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/transformer_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "models/head_ablator.h"
#include "nn/attention_mask.h"
#include "nn/state_dict.h"
#include "nn/widened_weights.h"
#include "runtime/caching_cpu_allocator.h"
#include "runtime/flush_denormals.h"
#include "runtime/runtime_init.h"
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
    // A finite sum proves every value finite (an Inf or NaN makes any sum Inf or NaN); only a sum
    // that overflowed or met a non-finite value pays for the exact test. 5x cheaper than
    // isfinite().all() on GPT-2's weights, which the first run checks.
    if (std::isfinite(part.sum(torch::kFloat).item<float>())) continue;
    if (!torch::isfinite(part).all().item<bool>()) return false;
  }
  return true;
}

// "layer 2, item 1, head 3" of the first non-finite attention weight, or empty.
std::string firstNonFinite(const AttentionGroup& g) {
  const FloatTensor::Storage& a = g.attention.data;
  const auto bad = std::find_if(a.begin(), a.end(), [](float v) { return !std::isfinite(v); });
  if (bad == a.end()) return {};
  const int64_t matrix = static_cast<int64_t>(g.queries()) * g.keys();
  const int64_t at = (bad - a.begin()) / std::max<int64_t>(1, matrix);
  const int64_t heads = g.heads(), batch = g.batch();
  const int64_t slot = at / (heads * batch);
  const int64_t layer = g.keptLayers.empty() ? slot : g.keptLayers[static_cast<std::size_t>(slot)];
  return "layer " + std::to_string(layer) + ", item " + std::to_string((at / heads) % batch + 1) +
         ", head " + std::to_string(at % heads);
}

// Copies one layer's kept queries or keys ([B, H, T, hd]) into the result's [L, B, H, T, hd],
// allocated on the first layer from the shape scaledDotProduct saw (head_dim is the family's), and
// zeroes the rows of padding. False when the layer kept none (its attention did not go through
// scaledDotProduct) or kept another shape than layer 0.
bool keepLayer(FloatTensor& out, const torch::Tensor& t, int64_t layer, int64_t layers,
               const std::vector<int>& lengths) {
  if (!t.defined() || t.dim() != 4) return false;
  if (out.empty()) {
    out = FloatTensor({layers, t.size(0), t.size(1), t.size(2), t.size(3)});
  } else if (out.dim(1) != t.size(0) || out.dim(2) != t.size(1) || out.dim(3) != t.size(2) ||
             out.dim(4) != t.size(3)) {
    return false;
  }
  torch::Tensor dst = torch::from_blob(out.data.data(),
                                       {layers, t.size(0), t.size(1), t.size(2), t.size(3)})[layer];
  dst.copy_(t);
  zeroPaddedQueries(dst, lengths, 0, 2);
  return true;
}

}  // namespace

TransformerModel::TransformerModel(std::shared_ptr<TransformerFamily> family, std::string name)
    : m_family(std::move(family)), m_name(std::move(name)) {
  if (m_name.empty()) m_name = m_family->info().name;
  for (const torch::Tensor& p : m_family->module().parameters()) {
    const std::string dtype = p.scalar_type() == torch::kFloat  ? "F32"
                              : p.scalar_type() == torch::kHalf ? "F16"
                              : p.scalar_type() == torch::kBFloat16
                                  ? "BF16"
                                  : std::string(c10::toString(p.scalar_type()));
    m_weightDtype = m_weightDtype.empty() || m_weightDtype == dtype ? dtype : "mixed";
    if (p.scalar_type() != torch::kFloat)
      m_widenedBytes += static_cast<uint64_t>(p.numel()) * sizeof(float);
  }
}

ModelInfo TransformerModel::info() const {
  ModelInfo i = m_family->info();
  i.name = m_name;
  i.supportsValueNorms = m_family->supportsValueNorms();
  i.weightDtype = m_weightDtype;
  i.widenedBytes = m_widenedBytes;
  i.weightCacheBytes = m_widened.bytes();
  return i;
}

uint64_t TransformerModel::weightCacheBudget(const RunLimits& limits, uint64_t runBytes) const {
  int64_t budget = limits.weightCacheBytes;
  if (m_widenedBytes == 0) return 0;
  if (budget == RunLimits::kAutoWeightCache) {
    // What this run leaves of the machine's memory, the copies already kept counted as free.
    const uint64_t available = availableMemoryBytes() + m_widened.bytes();
    const uint64_t needed = runBytes + RunLimits::kWeightCacheHeadroom;
    budget = available > needed ? static_cast<int64_t>(available - needed) : 0;
  }
  const uint64_t b = budget > 0 ? static_cast<uint64_t>(budget) : 0;
  // Asked to keep fewer bytes than are held (a lower limit, a one-shot run): give them back.
  if (b < m_widened.bytes()) m_widened.clear();
  return b;
}

std::vector<Token> TransformerModel::tokenize(const std::string& text) const {
  return m_family->tokenize(text);
}

std::vector<NamedTensor> TransformerModel::parameters() const {
  std::lock_guard<std::mutex> lock(m_family->mutex());
  return stateDict(m_family->module());
}

MemoryEstimate TransformerModel::estimateParts(int64_t B, int64_t Tq, int64_t Tk, bool keepScores,
                                               int64_t keptLayers, bool keepQueryKey,
                                               int64_t Tt) const {
  const ModelInfo mi = m_family->info();
  // In doubles: hostile sizes (a million items of a million tokens) must not wrap around to a
  // small number that passes the limit.
  const auto bytes = [](double v) {
    return v >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(v);
  };
  const double perCell = static_cast<double>(B) * mi.heads * 4;
  const double layerAttention = perCell * Tq * Tk;
  double attention = layerAttention * keptLayers;
  double perLayer = layerAttention * (keepScores ? 2 : 1);
  // One layer's scores while its softmax is written, and a copy on the way off another device
  // (or the buffer of the layers that are not kept).
  double transient = layerAttention * 2;
  double tokens = static_cast<double>(Tq + Tk);
  if (mi.encoderDecoder()) {
    // The decoder's self-attention [Tt, Tt] and cross-attention [Tt, Tk] in every decoder layer.
    const double decoderLayer = perCell * Tt * (Tt + Tk);
    attention += decoderLayer * mi.decoderLayers;
    transient = std::max(transient, decoderLayer * 2);
    tokens += static_cast<double>(2 * Tt);
    perLayer = 0;  // an encoder-decoder keeps every layer of both stacks
  }
  const double scores = keepScores ? attention : 0;
  // The kept q and k counted as d_model floats per token and layer, the copy back from a device
  // as one more layer. That assumes heads × head_dim = d_model, which does not hold everywhere:
  // Qwen3 gives head_dim on its own and T5 has num_heads × d_kv, so there it is an approximation.
  const double queryKey =
      keepQueryKey ? static_cast<double>(B) * (Tq + Tk) * mi.dModel * 4 * (mi.layers + 1) : 0.0;
  const double activations =
      static_cast<double>(B) * tokens * static_cast<double>(m_family->activationBytesPerToken());
  // The tokens themselves (text, label, ids), and the input and output copied into the result.
  const double tokenBytes = static_cast<double>(B) * tokens * (sizeof(Token) + 16);
  MemoryEstimate e;
  e.weights = mi.parameterBytes;
  e.attention = bytes(attention);
  e.scores = bytes(scores);
  e.perLayer = bytes(perLayer);
  e.working = bytes(transient + queryKey + activations + tokenBytes);
  e.total = bytes(static_cast<double>(mi.parameterBytes) + attention + scores + transient +
                  queryKey + activations + tokenBytes);
  e.layersKept = static_cast<int>(keptLayers);
  e.layers = mi.layers;
  e.queries = static_cast<int>(std::min<int64_t>(Tq, std::numeric_limits<int>::max()));
  e.keys = static_cast<int>(std::min<int64_t>(Tk, std::numeric_limits<int>::max()));
  return e;
}

int64_t TransformerModel::keptLayerCount(const RunRequest& request) const {
  const ModelInfo mi = m_family->info();
  const int layers = mi.layers;
  if (request.layers.empty()) return layers;
  if (mi.encoderDecoder())
    throw Error(ErrorKind::InvalidArgument,
                "keeping only some layers' attention is for one-stack models so far; " + m_name +
                    " is an encoder-decoder");
  int previous = -1;
  for (const int l : request.layers) {
    if (l < 0 || l >= layers)
      throw Error(ErrorKind::InvalidArgument, "layer " + std::to_string(l) +
                                                  " to keep is out of range: " + m_name +
                                                  " has layers 0.." + std::to_string(layers - 1));
    if (l <= previous)
      throw Error(ErrorKind::InvalidArgument,
                  "the layers to keep must be ascending and distinct (layer " + std::to_string(l) +
                      " after " + std::to_string(previous) + ")");
    previous = l;
  }
  return static_cast<int64_t>(request.layers.size());
}

MemoryEstimate TransformerModel::estimate(const RunRequest& request) const {
  return withTorchErrors(m_name, [&] {
    const ModelInfo mi = info();
    const int64_t kept = keptLayerCount(request);
    if (request.random) {
      const RandomInput& in = *request.random;
      return estimateParts(in.batch, in.seqLen, in.seqLen, request.keepScores, kept,
                           request.keepQueryKey);
    }
    const auto tokenize = [&](const std::string& s) {
      return request.pair ? m_family->tokenizePair(s, *request.pair) : m_family->tokenize(s);
    };
    BatchInput batch = tokenizeBatch(request, tokenize, mi.maxPositions);
    if (mi.encoderDecoder())
      addDecoderInputs(batch, request, m_family->decoderStartToken(),
                       [&](const std::string& s) { return m_family->tokenizeTarget(s); });
    return estimateParts(static_cast<int64_t>(batch.tokens.size()), batch.maxQuery, batch.maxKey,
                         request.keepScores, kept, request.keepQueryKey,
                         batch.maxDecoder + std::max(0, request.generate));
  });
}

void TransformerModel::prepareModules(const torch::Device& dev) const {
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
}

AttentionResult TransformerModel::run(const RunRequest& request) const {
  return withTorchErrors(m_name, [&] { return runUnguarded(request); });
}

namespace {

/// Where the layers of one stack write one attention group: on the CPU, views of the result's
/// [kept layers, B, H, Tq, Tk] buffers (no per-layer copies, no stacking); elsewhere a device
/// buffer per layer that is copied back. A layer whose attention is not kept (RunRequest::layers)
/// writes into one reused buffer. With RunRequest::keepQueryKey it also keeps each layer's q and
/// k as scaledDotProduct saw them. Without a group (generation steps), nothing is kept.
class GroupWriter final {
 public:
  GroupWriter() = default;
  GroupWriter(AttentionGroup& g, int64_t L, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
              const RunRequest& request, const torch::Device& dev,
              const std::vector<int>& keptLayers = {}, bool keepQueryKey = false,
              std::vector<std::string>* notices = nullptr, std::string modelName = {})
      : m_group(&g),
        m_direct(dev.is_cpu()),
        m_dev(dev),
        m_shape({B, H, Tq, Tk}),
        m_layers(L),
        m_keepQueryKey(keepQueryKey),
        m_notices(notices),
        m_modelName(std::move(modelName)) {
    m_slot.assign(static_cast<std::size_t>(L), -1);
    int64_t kept = L;
    if (keptLayers.empty()) {
      for (int64_t l = 0; l < L; ++l) m_slot[static_cast<std::size_t>(l)] = l;
    } else {
      kept = static_cast<int64_t>(keptLayers.size());
      for (std::size_t i = 0; i < keptLayers.size(); ++i)
        m_slot[static_cast<std::size_t>(keptLayers[i])] = static_cast<int64_t>(i);
      g.keptLayers = keptLayers;
      g.modelLayers = static_cast<int>(L);
    }
    // Every element is written by the layers (the padded queries' rows by finish()).
    g.attention = FloatTensor::uninitialized({kept, B, H, Tq, Tk});
    m_attention = torch::from_blob(g.attention.data.data(), {kept, B, H, Tq, Tk});
    if (request.keepScores) {
      g.scores = FloatTensor::uninitialized({kept, B, H, Tq, Tk});
      m_scores = torch::from_blob(g.scores.data.data(), {kept, B, H, Tq, Tk});
    }
    if (request.keepValueNorms) {
      g.valueNorms = FloatTensor({L, B, H, Tk});
      m_valueNorms = torch::from_blob(g.valueNorms.data.data(), {L, B, H, Tk});
    }
  }

  AttentionBuffers buffers(int64_t l) {
    AttentionBuffers b;
    b.scoresUnused = true;
    if (!m_attention.defined()) return b;
    const auto deviceBuffer = [&] {
      return torch::empty(m_shape, torch::TensorOptions().device(m_dev));
    };
    const int64_t at = m_slot[static_cast<std::size_t>(l)];
    if (at < 0) {
      if (!m_dropped.defined()) m_dropped = deviceBuffer();
      b.attention = m_dropped;
    } else {
      b.attention = m_direct ? m_attention[at] : deviceBuffer();
      if (m_scores.defined()) b.scores = m_direct ? m_scores[at] : deviceBuffer();
    }
    b.scoresUnused = !b.scores.defined();
    m_queryKey = KeptQueryKey();
    if (m_keepQueryKey) b.queryKey = &m_queryKey;
    return b;
  }
  /// True when layer l's weights are final as soon as the layer writes them: on the CPU (no copy
  /// back from a device) with no padded query rows (finish() zeroes those), and kept.
  bool finalOnceWritten(int64_t l, const std::vector<int>& queryLengths) const {
    if (!m_attention.defined() || !m_direct || m_slot[static_cast<std::size_t>(l)] < 0)
      return false;
    for (const int n : queryLengths)
      if (n != m_shape[2]) return false;
    return true;
  }

  /// The buffer a layer writes its value norms into, filled with -1: a norm is never negative,
  /// so finish() finds a head or key the layer left unwritten.
  torch::Tensor valueNorms() const {
    return m_valueNorms.defined() ? torch::full({m_shape[0], m_shape[1], m_shape[3]}, -1.0f,
                                                torch::TensorOptions().device(m_dev))
                                  : torch::Tensor();
  }

  /// After layer l: copies its buffers back and zeroes padded query rows (and padded keys'
  /// value norms), and keeps its queries and keys.
  void finish(int64_t l, const AttentionBuffers& b, const torch::Tensor& valueNorms,
              const std::vector<int>& queryLengths, const std::vector<int>& keyLengths) {
    if (!m_attention.defined()) return;
    if (m_valueNorms.defined()) {
      // A family that declares value norms (supportsValueNorms) but whose layer wrote none would
      // otherwise show zeros as if every value vector were zero.
      if ((valueNorms < 0).any().item<bool>())
        throw Error(ErrorKind::Internal,
                    "layer " + std::to_string(l) +
                        " did not write the value-weighted norms its model family declares (for "
                        "every head and key): a bug in the family");
      m_valueNorms[l].copy_(valueNorms);
      // Padded keys carry no token: their norms are 0, like their attention.
      const int64_t Tk = m_shape[3];
      for (std::size_t i = 0; i < keyLengths.size(); ++i) {
        const int64_t real = keyLengths[i];
        m_valueNorms[l][static_cast<int64_t>(i)].narrow(1, real, Tk - real).zero_();
      }
    }
    if (m_keepQueryKey) keepQueryKey(l, queryLengths, keyLengths);
    const int64_t at = m_slot[static_cast<std::size_t>(l)];
    if (at < 0) return;
    if (!m_direct) {
      m_attention[at].copy_(b.attention);
      if (m_scores.defined()) m_scores[at].copy_(b.scores);
    }
    torch::Tensor layerAttention = m_attention[at];
    zeroPaddedQueries(layerAttention, queryLengths, 0, 2);
  }

 private:
  void keepQueryKey(int64_t l, const std::vector<int>& queryLengths,
                    const std::vector<int>& keyLengths) {
    AttentionGroup& g = *m_group;
    if (keepLayer(g.queryVectors, m_queryKey.queries, l, m_layers, queryLengths) &&
        keepLayer(g.keyVectors, m_queryKey.keys, l, m_layers, keyLengths)) {
      g.queryKeyScales.push_back(m_queryKey.scale);
      return;
    }
    // Not worth failing the run over: the views that need them say they are missing.
    m_keepQueryKey = false;
    g.queryVectors = FloatTensor();
    g.keyVectors = FloatTensor();
    g.queryKeyScales.clear();
    if (m_notices)
      m_notices->push_back("layer " + std::to_string(l) + " of " + m_modelName +
                           " does not compute its attention through scaledDotProduct: its "
                           "queries and keys are not kept");
  }

  AttentionGroup* m_group = nullptr;
  bool m_direct = true;
  torch::Device m_dev = torch::kCPU;
  std::vector<int64_t> m_shape;
  int64_t m_layers = 0;
  std::vector<int64_t> m_slot;  // model layer -> index in the result, -1 when not kept
  bool m_keepQueryKey = false;
  std::vector<std::string>* m_notices = nullptr;
  std::string m_modelName;
  KeptQueryKey m_queryKey;
  torch::Tensor m_attention, m_scores, m_valueNorms, m_dropped;
};

/// RunRequest::preview's result: the run's header, the tokens and one finished layer's
/// attention (slot `slot` of `main`, model layer `layer`).
AttentionResult previewOf(const AttentionResult& r, const AttentionGroup& main, int slot, int layer,
                          int layers, const BatchInput& batch) {
  AttentionResult p;
  p.preview = true;
  p.modelName = r.modelName;
  p.device = r.device;
  AttentionGroup& g = p.groups.emplace_back();
  g.name = main.name;
  g.kvHeads = main.kvHeads;
  g.distribution = main.distribution;
  const std::vector<int64_t>& shape = main.attention.shape;
  const std::size_t per = FloatTensor::countOf({shape[1], shape[2], shape[3], shape[4]});
  g.attention = FloatTensor::uninitialized({1, shape[1], shape[2], shape[3], shape[4]});
  std::copy_n(main.attention.data.begin() + static_cast<std::ptrdiff_t>(per * slot), per,
              g.attention.data.begin());
  g.keptLayers = {layer};
  g.modelLayers = layers;
  BatchInput tokens;
  tokens.tokens = batch.tokens;
  tokens.contextTokens = batch.contextTokens;
  tokens.queryLengths = batch.queryLengths;
  tokens.keyLengths = batch.keyLengths;
  moveTokensInto(std::move(tokens), p);
  return p;
}

/// One layer stack of a run: the encoder (or the only stack) or an encoder-decoder's decoder.
struct Stack {
  int64_t layers = 0;
  std::string name;  // LayerTrace::stack
  torch::Tensor mask, positions, context, crossMask;
  const std::vector<int>* queryLengths = nullptr;
  const std::vector<int>* keyLengths = nullptr;
  const std::vector<int>* contextLengths = nullptr;
  GroupWriter* self = nullptr;
  GroupWriter* cross = nullptr;
  std::vector<LayerTrace>* traces = nullptr;  // null: nothing recorded
  std::function<torch::Tensor(int, const torch::Tensor&, LayerContext&)> layer;
  int progressBase = 0;                    // layers done before this stack (RunRequest::progress)
  int progressTotal = 0;                   // 0: this pass reports no progress (generation steps)
  std::function<void(int64_t)> layerDone;  // after each layer's attention is written; may be empty
  // As soon as a layer's self-attention weights are final (GroupWriter::finalOnceWritten), before
  // the rest of that layer runs; may be empty.
  std::function<void(int64_t)> attentionWritten;
};

/// Runs the stack's layers on x, each writing its attention through the stack's writers; polls
/// the cancel flag between layers.
torch::Tensor runStack(const Stack& s, torch::Tensor x, const RunRequest& request,
                       const std::string& variant) {
  for (int64_t l = 0; l < s.layers; ++l) {
    throwIfCancelled(request);
    LayerTrace trace;
    trace.variant = variant;
    trace.stack = s.name;
    TraceRecorder rec(s.traces ? &trace : nullptr);
    LayerContext ctx;
    ctx.layer = static_cast<int>(l);
    ctx.mask = s.mask;
    ctx.positions = s.positions;
    ctx.context = s.context;
    ctx.keyLengths = s.keyLengths;
    ctx.crossMask = s.crossMask;
    ctx.contextLengths = s.contextLengths;
    ctx.rec = &rec;
    if (s.self) {
      ctx.buffers = s.self->buffers(l);
      ctx.valueNorms = s.self->valueNorms();
      if (s.attentionWritten && s.self->finalOnceWritten(l, *s.queryLengths))
        ctx.buffers.written = [&s, l] { s.attentionWritten(l); };
    }
    if (s.cross) ctx.crossBuffers = s.cross->buffers(l);
    x = s.layer(static_cast<int>(l), x, ctx);
    if (s.self) s.self->finish(l, ctx.buffers, ctx.valueNorms, *s.queryLengths, *s.keyLengths);
    if (s.cross) s.cross->finish(l, ctx.crossBuffers, {}, *s.queryLengths, *s.contextLengths);
    if (s.traces) s.traces->push_back(std::move(trace));
    if (s.progressTotal > 0 && request.progress)
      request.progress(s.progressBase + static_cast<int>(l) + 1, s.progressTotal);
    if (s.layerDone) s.layerDone(l);
  }
  return x;
}

torch::Tensor deviceMask(const std::vector<int>& keyLengths, int64_t Tq, int64_t Tk, bool causal,
                         int slidingWindow, const torch::Device& dev) {
  MaskOptions o;
  o.keyLengths = keyLengths;
  o.queries = Tq;
  o.keys = Tk;
  o.causal = causal;
  o.slidingWindow = slidingWindow;
  torch::Tensor mask = buildMask(o);
  return mask.defined() ? mask.to(dev) : mask;
}

}  // namespace

/// An upper bound on a run's multiply-adds ×2, from the request before tokenising: no more tokens
/// than bytes (plus a start and an end token), two bytes a parameter (F16 weights count double).
double workBound(const RunRequest& request, const ModelInfo& mi) {
  if (request.target || request.generate > 0 || request.context) return -1;  // not worth bounding
  double B = 1, T = 0;
  if (request.random) {
    B = request.random->batch;
    T = request.random->seqLen;
  } else {
    B = std::max<double>(1, static_cast<double>(request.texts.size()));
    for (const std::string& t : request.texts) T = std::max(T, static_cast<double>(t.size()) + 2);
    if (request.pair) T += static_cast<double>(request.pair->size()) + 1;
  }
  const double params = static_cast<double>(mi.parameterBytes) / 2,
               layers = mi.layers + mi.decoderLayers;
  return 2 * params * B * T + 4 * B * T * T * mi.dModel * layers;
}

AttentionResult TransformerModel::runUnguarded(const RunRequest& request) const {
  const Stopwatch t0;
  // Before the guard below, which reaches every thread of the team.
  const RunThreads threads(workBound(request, info()));
  const FlushDenormals flushDenormals;
  // The run's activations reuse each other's blocks (caching_cpu_allocator.h); after it they are
  // given back but for the newest few (keepUpTo below), which the next edit's run reuses without
  // page faults: between runs the process holds its results, not every layer's temporaries (an
  // F16 model's widened weights among them).
  CachingCpuAllocator::ReleaseAfter releaseActivations;
  const ModelInfo mi = info();
  m_family->checkRequest(request);
  if (request.keepValueNorms && !m_family->supportsValueNorms())
    throw Error(ErrorKind::InvalidArgument,
                "value-weighted norms are implemented for the decoders (GPT-2, the tiny GPT, "
                "Llama, Mistral, Qwen, GPT-NeoX, Bloom) and the encoders so far; " +
                    mi.name + " (" + mi.kind + ") does not provide them");
  const bool encDec = mi.encoderDecoder();
  if (!encDec && (request.target || request.generate > 0))
    throw Error(ErrorKind::InvalidArgument,
                mi.name +
                    " is not an encoder-decoder: a target text and generation into one "
                    "need a model with a decoder (T5, say)");
  if (request.generate < 0)
    throw Error(ErrorKind::InvalidArgument,
                "the number of tokens to generate must not be negative");
  const std::string device = resolveDevice(request.device);
  AttentionResult r;
  r.modelName = m_name;
  r.device = device;
  const auto tokenize = [&](const std::string& s) {
    return request.pair ? m_family->tokenizePair(s, *request.pair) : m_family->tokenize(s);
  };
  const int64_t kept = keptLayerCount(request);
  if (request.random && request.random->batch > 0 && request.random->seqLen > 0 &&
      request.random->seqLen <= request.limits.maxTokens) {
    // Before the batch exists: a million items of a thousand tokens are gigabytes of tokens alone.
    const int64_t B = request.random->batch, T = request.random->seqLen;
    checkMemory(estimateParts(B, T, T, request.keepScores, kept, request.keepQueryKey).total,
                request.limits.memoryLimitBytes,
                m_name + " on random input of " + std::to_string(B) + " x " + std::to_string(T) +
                    " tokens");
  }
  BatchInput batch = request.random ? randomBatch(*request.random, request.limits)
                                    : tokenizeBatch(request, tokenize, mi.maxPositions);
  if (encDec) {
    addDecoderInputs(batch, request, m_family->decoderStartToken(),
                     [&](const std::string& s) { return m_family->tokenizeTarget(s); });
    if (batch.maxDecoder + request.generate > request.limits.maxTokens)
      throw Error(ErrorKind::ResourceLimit,
                  "the decoder input would have " +
                      std::to_string(batch.maxDecoder + request.generate) +
                      " tokens, more than the limit of " +
                      std::to_string(request.limits.maxTokens) + " (raise --max-tokens)");
  }
  r.timings.tokenizeMs = t0.ms();

  const int64_t L = mi.layers, B = static_cast<int64_t>(batch.tokens.size()), H = mi.heads;
  const int64_t Tq = batch.maxQuery, Tk = batch.maxKey;
  const int64_t TtMax = batch.maxDecoder + request.generate;
  std::string what =
      m_name + " on " + std::to_string(B) + " x " + std::to_string(Tq) + " tokens (" +
      std::to_string(kept) + (kept < L ? " of " + std::to_string(L) : std::string()) +
      " layers x " + std::to_string(H) + " heads of " + std::to_string(Tq) + " x " +
      std::to_string(Tk) + " attention" + (request.keepScores ? ", scores kept too" : "");
  if (encDec)
    what += ", and " + std::to_string(mi.decoderLayers) + " decoder layers of " +
            std::to_string(TtMax) + " target tokens";
  const uint64_t runBytes =
      estimateParts(B, Tq, Tk, request.keepScores, kept, request.keepQueryKey, TtMax).total;
  checkMemory(runBytes, request.limits.memoryLimitBytes, what + ")");
  throwIfCancelled(request);
  // computeWeight keeps float32 copies of compact weights within what the limits grant.
  const WidenedWeights::Scope widened(&m_widened, weightCacheBudget(request.limits, runBytes));

  std::lock_guard<std::mutex> lock(m_family->mutex());
  const Stopwatch t1;
  const torch::Device dev(device);
  prepareModules(dev);
  c10::InferenceMode inference;
  const Embedded in = m_family->embed(batch, request, dev);
  r.input = withoutPadding(in.x, batch.queryLengths);
  if (in.context.defined()) r.contextInput = toFloatTensor(in.context);

  // One group for one stack: self-attention, or cross-attention when keys and values come from a
  // context (the toy layer). Encoder-decoders add the decoder's two.
  r.groups.reserve(3);  // the writers below keep views of the groups' buffers
  AttentionGroup& main = r.groups.emplace_back();
  main.name = in.context.defined() ? "cross" : "self";
  main.kvHeads = mi.kvHeadsOrHeads();
  GroupWriter mainWriter(main, L, B, H, Tq, Tk, request, dev, request.layers, request.keepQueryKey,
                         &r.notices, m_name);

  Stack encoder;
  encoder.layers = L;
  encoder.name = encDec ? "encoder" : "";
  // A causal mask orders a sequence against itself: cross-attention keys come from another
  // sequence, so every query sees all of them.
  encoder.mask = deviceMask(batch.keyLengths, Tq, Tk, mi.causal && !in.context.defined(),
                            mi.slidingWindow, dev);
  encoder.positions = torch::arange(Tq, torch::TensorOptions().dtype(torch::kLong).device(dev));
  encoder.context = in.context;
  encoder.queryLengths = &batch.queryLengths;
  encoder.keyLengths = &batch.keyLengths;
  encoder.self = &mainWriter;
  encoder.traces = &r.traces;
  encoder.layer = [&](int i, const torch::Tensor& x, LayerContext& c) {
    return m_family->layer(i, x, c);
  };
  encoder.progressTotal = static_cast<int>(L) + (encDec ? mi.decoderLayers : 0);
  bool previewed = false;
  if (request.preview && !encDec) {
    // From inside the layer when its weights are final by then, else after it.
    encoder.attentionWritten = encoder.layerDone = [&](int64_t l) {
      const int slot = main.slotOf(static_cast<int>(l));
      if (previewed || slot < 0 || l + 1 >= L) return;
      previewed = true;
      request.preview(previewOf(r, main, slot, static_cast<int>(l), static_cast<int>(L), batch));
    };
  }
  const torch::Tensor hidden = m_family->finalNorm(runStack(encoder, in.x, request, mi.variant));

  // The hidden states the predictions come from: the encoder's (or only stack's), or the
  // decoder's.
  torch::Tensor predictFrom = hidden;
  const std::vector<int>* predictLengths = &batch.queryLengths;
  if (encDec) {
    for (const char* name : {"decoder_self", "cross"}) {
      AttentionGroup& g = r.groups.emplace_back();
      g.name = name;
      g.kvHeads = mi.kvHeadsOrHeads();
    }
    Stack decoder;
    decoder.layers = mi.decoderLayers;
    decoder.name = "decoder";
    decoder.context = hidden;
    decoder.queryLengths = &batch.decoderLengths;
    decoder.keyLengths = &batch.decoderLengths;
    decoder.contextLengths = &batch.keyLengths;
    decoder.layer = [&](int i, const torch::Tensor& x, LayerContext& c) {
      return m_family->decoderLayer(i, x, c);
    };
    // The decoder over the inputs so far: [B, Tt, C] after its final norm.
    const auto runDecoder = [&](GroupWriter* self, GroupWriter* cross,
                                std::vector<LayerTrace>* traces) {
      const int64_t Tt = batch.maxDecoder;
      decoder.mask = deviceMask(batch.decoderLengths, Tt, Tt, true, 0, dev);
      decoder.crossMask = deviceMask(batch.keyLengths, Tt, Tk, false, 0, dev);
      decoder.positions = torch::arange(Tt, torch::TensorOptions().dtype(torch::kLong).device(dev));
      decoder.self = self;
      decoder.cross = cross;
      decoder.traces = traces;
      // The pass that writes the attention reports progress; generation steps do not.
      decoder.progressBase = static_cast<int>(L);
      decoder.progressTotal = self ? static_cast<int>(L) + mi.decoderLayers : 0;
      const torch::Tensor x = m_family->embedDecoderIds(paddedIds(batch.decoderTokens, Tt).to(dev));
      return m_family->decoderFinalNorm(runStack(decoder, x, request, mi.variant));
    };
    // Greedy generation: each step reruns the decoder on the inputs so far (no key/value cache:
    // fine for a few hundred tokens) and appends every unfinished item's most likely token.
    r.generated.assign(static_cast<std::size_t>(B), {});
    std::vector<bool> finished(static_cast<std::size_t>(B), false);
    const std::optional<int64_t> end = m_family->endTokenId();
    for (int step = 0; step < request.generate; ++step) {
      const torch::Tensor h = runDecoder(nullptr, nullptr, nullptr);
      bool any = false;
      for (int64_t b = 0; b < B; ++b) {
        const auto i = static_cast<std::size_t>(b);
        if (finished[i]) continue;
        const torch::Tensor logits = m_family->logits(h[b][batch.decoderLengths[i] - 1]);
        if (!logits.defined())
          throw Error(ErrorKind::InvalidArgument,
                      mi.name + " has no language-model head: it cannot generate");
        Token next = m_family->vocabularyToken(logits.argmax().item<int64_t>());
        finished[i] = end && next.id == *end;
        r.generated[i].push_back(next);
        appendDecoderToken(batch, i, std::move(next));
        any = any || !finished[i];
      }
      if (!any) break;
    }
    const int64_t Tt = batch.maxDecoder;
    GroupWriter selfWriter(r.groups[1], mi.decoderLayers, B, H, Tt, Tt, request, dev);
    GroupWriter crossWriter(r.groups[2], mi.decoderLayers, B, H, Tt, Tk, request, dev);
    predictFrom = runDecoder(&selfWriter, &crossWriter, &r.traces);
    predictLengths = &batch.decoderLengths;
    r.decoderOutput = withoutPadding(predictFrom, batch.decoderLengths);
  }
  // Every sentence gets its own candidates (the window shows those of the sentence on screen);
  // one [C] row per item, so this costs B small matmuls, not a [B, T, V] tensor.
  for (int64_t b = 0; b < predictFrom.size(0); ++b) {
    const torch::Tensor logits =
        m_family->logits(predictFrom[b][(*predictLengths)[static_cast<std::size_t>(b)] - 1]);
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
  // A NaN attention weight makes its query's output NaN, and the residual stream carries it to
  // the last layer: finite outputs prove every kept weight finite without reading them all (a
  // scan of SmolLM's 1.1 GB of attention at T = 1024 took 0.25 s, 6 % of the run). Only when an
  // output is not finite is the attention searched for the first bad cell.
  const bool outputsFinite = allFinite(hidden) && (!encDec || allFinite(predictFrom));
  for (const AttentionGroup& g : r.groups) {
    if (outputsFinite) break;
    if (const std::string where = firstNonFinite(g); !where.empty()) {
      r.notices.push_back("the " + (r.groups.size() > 1 ? g.name + " " : std::string()) +
                          "attention holds NaN or infinite values (first at " + where +
                          "): those cells are not numbers, not masked");
    }
  }
  r.output = withoutPadding(hidden, batch.queryLengths);
  r.timings.forwardMs = t1.ms();
  moveTokensInto(std::move(batch), r);
  std::size_t resultBytes = 0;
  for (const AttentionGroup& g : r.groups)
    resultBytes += (g.attention.data.size() + g.scores.data.size()) * sizeof(float);
  releaseActivations.keepUpTo(resultBytes);
  r.timings.totalMs = t0.ms();
  return r;
}

HeadAblation TransformerModel::ablateHeads(const AblationRequest& request) const {
  return withTorchErrors(m_name, [&] { return ablateUnguarded(request); });
}

HeadAblation TransformerModel::ablateUnguarded(const AblationRequest& request) const {
  const Stopwatch t0;
  const ModelInfo mi = info();
  RunRequest run = request.run;
  if (mi.encoderDecoder())
    throw Error(ErrorKind::InvalidArgument,
                "head ablation is implemented for one-stack models so far; " + m_name +
                    " is an encoder-decoder");
  if (run.random)
    throw Error(ErrorKind::InvalidArgument,
                "head ablation reads the prediction for a text: give a text, not random input");
  if (run.texts.size() > 1) run.texts.resize(1);  // batch item 0
  run.keepScores = false;
  run.keepValueNorms = false;
  m_family->checkRequest(run);
  const std::string device = resolveDevice(run.device);
  const auto tokenize = [&](const std::string& s) {
    return run.pair ? m_family->tokenizePair(s, *run.pair) : m_family->tokenize(s);
  };
  const BatchInput batch = tokenizeBatch(run, tokenize, mi.maxPositions);
  const int64_t T = batch.maxQuery, Tk = batch.maxKey;
  // A bound: a run's estimate counts the [L, H, T, T] result, which the ablation never keeps
  // (one layer's attention is a temporary), plus the L saved layer inputs. The estimate's
  // autograd keeps every layer's softmax and activations for the backward: about what a run
  // that keeps scores holds, plus a copy of the activations per layer.
  uint64_t bytes = estimateParts(1, T, Tk, request.estimate, mi.layers).total;
  bytes += static_cast<uint64_t>(mi.layers + 1) * static_cast<uint64_t>(T) * mi.dModel * 4;
  if (request.estimate)
    bytes += static_cast<uint64_t>(mi.layers) * static_cast<uint64_t>(T + Tk) *
             m_family->activationBytesPerToken();
  checkMemory(bytes, run.limits.memoryLimitBytes,
              m_name + (request.estimate ? " estimating" : " ablating") + " the " +
                  std::to_string(mi.layers * mi.heads) + " heads on " + std::to_string(T) +
                  " tokens");
  throwIfCancelled(run);
  const WidenedWeights::Scope widened(&m_widened, weightCacheBudget(run.limits, bytes));

  std::lock_guard<std::mutex> lock(m_family->mutex());
  const torch::Device dev(device);
  prepareModules(dev);
  HeadAblator ablator(*m_family, batch, dev);
  AblationRequest inner = request;
  inner.run = run;
  HeadAblation r = request.estimate ? ablator.estimate(inner) : ablator.exact(inner);
  for (std::string& n : m_family->notices()) r.notices.push_back(std::move(n));
  if (!m_nonFiniteWeight->empty())
    r.notices.push_back("the weights hold NaN or infinite values (first in tensor '" +
                        *m_nonFiniteWeight + "'): the probabilities are not meaningful");
  r.milliseconds = t0.ms();
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
