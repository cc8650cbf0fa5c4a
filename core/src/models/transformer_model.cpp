// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/transformer_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "generation/generation_session.h"
#include "io/mapped_files.h"
#include "models/greedy_generation.h"
#include "models/group_writer.h"
#include "models/head_ablator.h"
#include "models/layer_stack.h"
#include "models/logit_lens.h"
#include "models/predictions.h"
#include "models/run_estimate.h"
#include "nn/attention_mask.h"
#include "nn/packed_weights.h"
#include "nn/sparse_moe_block.h"
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

/// Each layer's router choices ([B, T, k] experts and weights; none for a dense layer) as the
/// result's [L, B, T, k] routerExperts and routerWeights: -1 and 0 at padding and dense layers.
void writeRouting(const std::vector<MoeRouting>& layers, int64_t k, const std::vector<int>& lengths,
                  int64_t T, AttentionResult& r) {
  const int64_t L = static_cast<int64_t>(layers.size()), B = static_cast<int64_t>(lengths.size());
  r.routerExperts = FloatTensor({L, B, T, k});
  r.routerWeights = FloatTensor({L, B, T, k});
  const torch::Tensor experts = torch::from_blob(r.routerExperts.data.data(), {L, B, T, k});
  const torch::Tensor weights = torch::from_blob(r.routerWeights.data.data(), {L, B, T, k});
  experts.fill_(-1);
  for (int64_t l = 0; l < L; ++l) {
    const MoeRouting& m = layers[static_cast<std::size_t>(l)];
    if (!m.experts.defined()) continue;
    experts[l].copy_(m.experts.to(torch::kCPU).to(torch::kFloat));
    weights[l].copy_(m.weights.detach().to(torch::kCPU).to(torch::kFloat));
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t real = lengths[static_cast<std::size_t>(b)];
    experts.select(1, b).narrow(1, real, T - real).fill_(-1);
    weights.select(1, b).narrow(1, real, T - real).zero_();
  }
}

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

}  // namespace

TransformerModel::TransformerModel(std::shared_ptr<TransformerFamily> family, std::string name)
    : m_family(std::move(family)), m_name(std::move(name)) {
  if (m_name.empty()) m_name = m_family->info().name;
  std::set<const void*> seen;  // a tied parameter is one tensor under two names
  // "layers.N" -> the float32 bytes of its packed weights.
  std::map<std::string, uint64_t> packedLayers;
  for (const auto& named : m_family->module().named_parameters()) {
    const torch::Tensor& p = named.value();
    if (!seen.insert(p.data_ptr()).second) continue;
    if (const auto packed = packedLayout(p)) {
      // A GGUF matrix: a block of rows is dequantized at a time while a layer runs; counted as
      // its layer's weights widened at once. Embeddings and the head are never widened whole.
      m_weightDtype =
          m_weightDtype.empty() || m_weightDtype == packed->typeName ? packed->typeName : "mixed";
      const uint64_t widened = static_cast<uint64_t>(packed->rows * packed->columns) * 4;
      m_widenedBytes += widened;
      const std::size_t layer = named.key().find("layers.");
      if (layer != std::string::npos)
        packedLayers[named.key().substr(0, named.key().find('.', layer + 7))] += widened;
      continue;
    }
    const std::string dtype = p.scalar_type() == torch::kFloat  ? "F32"
                              : p.scalar_type() == torch::kHalf ? "F16"
                              : p.scalar_type() == torch::kBFloat16
                                  ? "BF16"
                                  : std::string(c10::toString(p.scalar_type()));
    m_weightDtype = m_weightDtype.empty() || m_weightDtype == dtype ? dtype : "mixed";
    const uint64_t widened = static_cast<uint64_t>(p.numel()) * sizeof(float);
    if (p.scalar_type() != torch::kFloat) {
      m_widenedBytes += widened;
      m_largestWidened = std::max(m_largestWidened, widened);
    }
    const auto bytes = static_cast<std::size_t>(p.numel()) * p.element_size();
    if (p.is_cpu() && insideMappedFile(p.data_ptr(), bytes)) m_mappedBytes += bytes;
  }
  for (const auto& [layer, bytes] : packedLayers)
    m_largestWidened = std::max(m_largestWidened, bytes);
}

ModelInfo TransformerModel::info() const {
  ModelInfo i = m_family->info();
  i.name = m_name;
  i.supportsValueNorms = m_family->supportsValueNorms();
  i.weightDtype = m_weightDtype;
  i.widenedBytes = m_widenedBytes;
  i.mappedBytes = m_mappedBytes;
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

namespace {

/// The score terms a run keeps ([kept layers, B, H, Tq, Tk] each).
int64_t keptScoreTerms(const RunRequest& request, const ModelInfo& mi) {
  return request.keepScoreTerms ? static_cast<int64_t>(mi.scoreTerms.size()) : 0;
}

}  // namespace

MemoryEstimate TransformerModel::estimateParts(int64_t B, int64_t Tq, int64_t Tk, bool keepScores,
                                               int64_t keptLayers, bool keepQueryKey, int64_t Tt,
                                               uint64_t outputBytesPerValue, int64_t scoreTerms,
                                               bool onDemand) const {
  ModelInfo mi = m_family->info();
  mi.mappedBytes = m_mappedBytes;
  // Without kept copies, the largest compact weight is widened while it is used.
  const uint64_t widening = m_widened.bytes() >= m_widenedBytes ? 0 : m_largestWidened;
  return estimateRunMemory(mi, m_family->activationBytesPerToken(), widening,
                           {B, Tq, Tk, keepScores, keptLayers, keepQueryKey, Tt,
                            outputBytesPerValue, scoreTerms, onDemand});
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
                           request.keepQueryKey, 0, request.limits.outputBytesPerAttentionValue,
                           keptScoreTerms(request, mi), request.attentionOnDemand);
    }
    const auto tokenize = [&](const std::string& s) {
      return request.pair ? m_family->tokenizePair(s, *request.pair) : m_family->tokenize(s);
    };
    BatchInput batch = tokenizeBatch(request, tokenize, mi.maxPositions);
    if (mi.encoderDecoder())
      addDecoderInputs(batch, request, m_family->decoderStartToken(),
                       [&](const std::string& s) { return m_family->tokenizeTarget(s); });
    MemoryEstimate e = estimateParts(static_cast<int64_t>(batch.tokens.size()), batch.maxQuery,
                                     batch.maxKey, request.keepScores, kept, request.keepQueryKey,
                                     batch.maxDecoder + std::max(0, request.generate),
                                     request.limits.outputBytesPerAttentionValue,
                                     keptScoreTerms(request, mi), request.attentionOnDemand);
    // The logit lens: its kept top k and its softmax block, counted as working memory.
    const uint64_t lens =
        lensBytes(request, static_cast<int64_t>(batch.tokens.size()), batch.maxQuery);
    e.working += lens;
    e.total = e.total + lens < e.total ? std::numeric_limits<uint64_t>::max() : e.total + lens;
    return e;
  });
}

int64_t TransformerModel::vocabularySize() const {
  if (!m_vocabulary) {
    // One row through the head, where the module is: V, or 0 without a head.
    std::lock_guard<std::mutex> lock(m_family->mutex());
    c10::InferenceMode inference;
    const auto params = m_family->module().parameters();
    const torch::Device dev = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
    const torch::Tensor probe = m_family->logits(torch::zeros(
        {1, static_cast<int64_t>(m_family->info().dModel)}, torch::TensorOptions().device(dev)));
    m_vocabulary = probe.defined() ? probe.size(-1) : 0;
  }
  return *m_vocabulary;
}

uint64_t TransformerModel::lensBytes(const RunRequest& request, int64_t B, int64_t T) const {
  const ModelInfo mi = m_family->info();
  if (request.logitLens <= 0 || request.random || !mi.causal || mi.encoderDecoder()) return 0;
  return logitLensBytes(mi, B, T, request.logitLens, vocabularySize(), LogitLens::kBlockValues);
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

}  // namespace

void TransformerModel::checkRunRequest(const RunRequest& request, const ModelInfo& mi) const {
  m_family->checkRequest(request);
  if (request.keepValueNorms && !m_family->supportsValueNorms())
    throw Error(ErrorKind::InvalidArgument,
                "value-weighted norms are implemented for the decoders (GPT-2, the tiny GPT, "
                "Llama, Mistral, Qwen, GPT-NeoX, Bloom) and the encoders so far; " +
                    mi.name + " (" + mi.kind + ") does not provide them");
  if (request.keepScoreTerms && mi.scoreTerms.empty())
    throw Error(ErrorKind::InvalidArgument,
                "the terms of the attention scores are kept for models whose scores are a sum "
                "of named terms (DeBERTa: c2c, c2p, p2c); " +
                    mi.name + " (" + mi.kind + ") has none");
  if (!mi.encoderDecoder() && (request.target || request.generate > 0))
    throw Error(ErrorKind::InvalidArgument,
                mi.name +
                    " is not an encoder-decoder: a target text and generation into one "
                    "need a model with a decoder (T5, say)");
  if (request.generate < 0)
    throw Error(ErrorKind::InvalidArgument,
                "the number of tokens to generate must not be negative");
  if (request.logitLens < 0)
    throw Error(ErrorKind::InvalidArgument,
                "the logit lens's number of tokens per position must not be negative");
  if (request.logitLens > 0 && request.random)
    throw Error(ErrorKind::InvalidArgument,
                "the logit lens reads a text's tokens: give a text, not random input");
}

BatchInput TransformerModel::runBatch(const RunRequest& request, const ModelInfo& mi,
                                      int64_t kept) const {
  if (request.random && request.random->batch > 0 && request.random->seqLen > 0 &&
      request.random->seqLen <= request.limits.maxTokens) {
    // Before the batch exists: a million items of a thousand tokens are gigabytes of tokens alone.
    const int64_t B = request.random->batch, T = request.random->seqLen;
    checkMemory(estimateParts(B, T, T, request.keepScores, kept, request.keepQueryKey, 0,
                              request.limits.outputBytesPerAttentionValue,
                              keptScoreTerms(request, mi), request.attentionOnDemand)
                    .total,
                request.limits.memoryLimitBytes,
                m_name + " on random input of " + std::to_string(B) + " x " + std::to_string(T) +
                    " tokens");
  }
  const auto tokenize = [&](const std::string& s) {
    return request.pair ? m_family->tokenizePair(s, *request.pair) : m_family->tokenize(s);
  };
  BatchInput batch = request.random ? randomBatch(*request.random, request.limits)
                                    : tokenizeBatch(request, tokenize, mi.maxPositions);
  if (mi.encoderDecoder()) {
    addDecoderInputs(batch, request, m_family->decoderStartToken(),
                     [&](const std::string& s) { return m_family->tokenizeTarget(s); });
    if (batch.maxDecoder + request.generate > request.limits.maxTokens)
      throw Error(ErrorKind::ResourceLimit,
                  "the decoder input would have " +
                      std::to_string(batch.maxDecoder + request.generate) +
                      " tokens, more than the limit of " +
                      std::to_string(request.limits.maxTokens) + " (raise --max-tokens)");
  }
  return batch;
}

uint64_t TransformerModel::checkRunMemory(const RunRequest& request, const ModelInfo& mi,
                                          const BatchInput& batch, int64_t kept) const {
  const int64_t L = mi.layers, B = static_cast<int64_t>(batch.tokens.size()), H = mi.heads;
  const int64_t Tq = batch.maxQuery, Tk = batch.maxKey;
  const int64_t TtMax = batch.maxDecoder + request.generate;
  std::string what =
      m_name + " on " + std::to_string(B) + " x " + std::to_string(Tq) + " tokens (" +
      std::to_string(kept) + (kept < L ? " of " + std::to_string(L) : std::string()) +
      " layers x " + std::to_string(H) + " heads of " + std::to_string(Tq) + " x " +
      std::to_string(Tk) + " attention" +
      (request.attentionOnDemand ? " recomputed on demand: each layer's queries and keys kept"
                                 : "") +
      (request.keepScores ? ", scores kept too" : "");
  if (mi.encoderDecoder())
    what += ", and " + std::to_string(mi.decoderLayers) + " decoder layers of " +
            std::to_string(TtMax) + " target tokens";
  if (request.limits.outputBytesPerAttentionValue > 0) what += ", written out as JSON";
  const uint64_t lens = lensBytes(request, B, Tq);
  if (lens > 0)
    what += ", and the logit lens's top " + std::to_string(request.logitLens) + " of " +
            std::to_string(vocabularySize()) + " tokens at " + std::to_string(L) + " layers x " +
            std::to_string(Tq) + " positions";
  const uint64_t runBytes =
      lens + estimateParts(B, Tq, Tk, request.keepScores, kept, request.keepQueryKey, TtMax,
                           request.limits.outputBytesPerAttentionValue, keptScoreTerms(request, mi),
                           request.attentionOnDemand)
                 .total;
  checkMemory(runBytes, request.limits.memoryLimitBytes, what + ")");
  return runBytes;
}

torch::Tensor TransformerModel::runEncoder(const RunRequest& request, const ModelInfo& mi,
                                           const BatchInput& batch, const Embedded& in,
                                           const torch::Device& dev, AttentionResult& r) const {
  const int64_t L = mi.layers, B = static_cast<int64_t>(batch.tokens.size());
  const int64_t Tq = batch.maxQuery, Tk = batch.maxKey;
  // One group for one stack: self-attention, or cross-attention when keys and values come from a
  // context (the toy layer). Encoder-decoders add the decoder's two.
  r.groups.reserve(3);  // the writers keep views of the groups' buffers
  AttentionGroup& main = r.groups.emplace_back();
  main.name = in.context.defined() ? "cross" : "self";
  main.kvHeads = mi.kvHeadsOrHeads();
  GroupWriter writer(main, L, B, mi.heads, Tq, Tk, request, dev, request.layers,
                     request.keepQueryKey, &r.notices, m_name,
                     request.keepScoreTerms ? mi.scoreTerms : std::vector<std::string>());

  LayerStack encoder;
  encoder.layers = L;
  encoder.name = mi.encoderDecoder() ? "encoder" : "";
  // A causal mask orders a sequence against itself: cross-attention keys come from another
  // sequence, so every query sees all of them.
  encoder.mask = deviceMask(batch.keyLengths, Tq, Tk, mi.causal && !in.context.defined(),
                            mi.slidingWindow, dev);
  encoder.positions = torch::arange(Tq, torch::TensorOptions().dtype(torch::kLong).device(dev));
  encoder.context = in.context;
  encoder.queryLengths = &batch.queryLengths;
  encoder.keyLengths = &batch.keyLengths;
  encoder.self = &writer;
  encoder.traces = &r.traces;
  encoder.layer = [&](int i, const torch::Tensor& x, LayerContext& c) {
    return m_family->layer(i, x, c);
  };
  encoder.progressTotal = static_cast<int>(L) + mi.decoderLayers;
  std::vector<MoeRouting> routing;
  const int64_t topK = m_family->routerTopK();
  if (topK > 0 && !mi.encoderDecoder()) encoder.routing = &routing;
  bool previewed = false;
  if (request.preview && !mi.encoderDecoder() && !request.attentionOnDemand) {
    // From inside the layer when its weights are final by then, else after it.
    encoder.attentionWritten = encoder.layerDone = [&](int64_t l) {
      const int slot = main.slotOf(static_cast<int>(l));
      if (previewed || slot < 0 || l + 1 >= L) return;
      previewed = true;
      request.preview(previewOf(r, main, slot, static_cast<int>(l), static_cast<int>(L), batch));
    };
  }
  std::optional<LogitLens> lens;
  if (request.logitLens > 0) {
    lens.emplace(*m_family, batch.tokens, Tq, L, request.logitLens);
    encoder.hiddenDone = [&](int64_t l, const torch::Tensor& x) { lens->addLayer(l, x); };
  }
  torch::Tensor hidden = m_family->finalNorm(encoder.run(in.x, request, mi.variant));
  if (lens) lens->moveInto(r);
  if (encoder.routing) writeRouting(routing, topK, batch.queryLengths, Tq, r);
  return hidden;
}

torch::Tensor TransformerModel::runDecoder(const RunRequest& request, const ModelInfo& mi,
                                           BatchInput& batch, const torch::Tensor& encoded,
                                           const torch::Device& dev, AttentionResult& r) const {
  const int64_t B = static_cast<int64_t>(batch.tokens.size()), Tk = batch.maxKey;
  for (const char* name : {"decoder_self", "cross"}) {
    AttentionGroup& g = r.groups.emplace_back();
    g.name = name;
    g.kvHeads = mi.kvHeadsOrHeads();
  }
  LayerStack decoder;
  decoder.layers = mi.decoderLayers;
  decoder.name = "decoder";
  decoder.context = encoded;
  decoder.queryLengths = &batch.decoderLengths;
  decoder.keyLengths = &batch.decoderLengths;
  decoder.contextLengths = &batch.keyLengths;
  decoder.layer = [&](int i, const torch::Tensor& x, LayerContext& c) {
    return m_family->decoderLayer(i, x, c);
  };
  // The decoder over the inputs so far: [B, Tt, C] after its final norm.
  const auto decode = [&](GroupWriter* self, GroupWriter* cross, std::vector<LayerTrace>* traces) {
    const int64_t Tt = batch.maxDecoder;
    decoder.mask = deviceMask(batch.decoderLengths, Tt, Tt, true, 0, dev);
    decoder.crossMask = deviceMask(batch.keyLengths, Tt, Tk, false, 0, dev);
    decoder.positions = torch::arange(Tt, torch::TensorOptions().dtype(torch::kLong).device(dev));
    decoder.self = self;
    decoder.cross = cross;
    decoder.traces = traces;
    // The pass that writes the attention reports progress; generation steps do not.
    decoder.progressBase = mi.layers;
    decoder.progressTotal = self ? mi.layers + mi.decoderLayers : 0;
    const torch::Tensor x = m_family->embedDecoderIds(paddedIds(batch.decoderTokens, Tt).to(dev));
    return m_family->decoderFinalNorm(decoder.run(x, request, mi.variant));
  };
  r.generated = generateGreedily(
      batch, request.generate, *m_family, [&] { return decode(nullptr, nullptr, nullptr); },
      m_name);
  // Then one pass over the whole decoder input, generated tokens included, that keeps the
  // attention.
  const int64_t Tt = batch.maxDecoder;
  GroupWriter selfWriter(r.groups[1], mi.decoderLayers, B, mi.heads, Tt, Tt, request, dev);
  GroupWriter crossWriter(r.groups[2], mi.decoderLayers, B, mi.heads, Tt, Tk, request, dev);
  return decode(&selfWriter, &crossWriter, &r.traces);
}

void TransformerModel::addNonFiniteNotices(AttentionResult& r, bool outputsFinite) const {
  if (!m_nonFiniteWeight->empty()) {
    r.notices.push_back("the weights hold NaN or infinite values (first in tensor '" +
                        *m_nonFiniteWeight + "'): attention and predictions are not meaningful");
  }
  // A NaN attention weight makes its query's output NaN, and the residual stream carries it to
  // the last layer: finite outputs prove every kept weight finite without reading them all (a
  // scan of SmolLM's 1.1 GB of attention at T = 1024 took 0.25 s, 6 % of the run). Only when an
  // output is not finite is the attention searched for the first bad cell.
  for (const AttentionGroup& g : r.groups) {
    if (outputsFinite) break;
    if (const std::string where = firstNonFinite(g); !where.empty()) {
      r.notices.push_back("the " + (r.groups.size() > 1 ? g.name + " " : std::string()) +
                          "attention holds NaN or infinite values (first at " + where +
                          "): those cells are not numbers, not masked");
    }
  }
}

AttentionResult TransformerModel::runUnguarded(const RunRequest& request) const {
  const Stopwatch t0;
  // Before the guard below, which reaches every thread of the team.
  const RunThreads threads(runWorkBound(request, info()));
  const FlushDenormals flushDenormals;
  // The run's activations reuse each other's blocks (caching_cpu_allocator.h); after it they are
  // given back but for the newest few (keepUpTo below), which the next edit's run reuses without
  // page faults: between runs the process holds its results, not every layer's temporaries (an
  // F16 model's widened weights among them).
  CachingCpuAllocator::ReleaseAfter releaseActivations;
  const ModelInfo mi = info();
  checkRunRequest(request, mi);
  AttentionResult r;
  r.modelName = m_name;
  r.device = resolveDevice(request.device);
  const int64_t kept = keptLayerCount(request);
  BatchInput batch = runBatch(request, mi, kept);
  r.timings.tokenizeMs = t0.ms();
  const uint64_t runBytes = checkRunMemory(request, mi, batch, kept);
  throwIfCancelled(request);
  // computeWeight keeps float32 copies of compact weights within what the limits grant.
  const WidenedWeights::Scope widened(&m_widened, weightCacheBudget(request.limits, runBytes));

  std::lock_guard<std::mutex> lock(m_family->mutex());
  const Stopwatch t1;
  const torch::Device dev(r.device);
  prepareModules(dev);
  c10::InferenceMode inference;
  if (request.logitLens > 0) LogitLens::check(*m_family, mi, dev);
  const Embedded in = m_family->embed(batch, request, dev);
  r.input = withoutPadding(in.x, batch.queryLengths);
  if (in.context.defined()) r.contextInput = toFloatTensor(in.context);
  const torch::Tensor hidden = runEncoder(request, mi, batch, in, dev, r);
  // The hidden states the predictions come from: the encoder's (or only stack's), or the
  // decoder's.
  torch::Tensor predictFrom = hidden;
  const std::vector<int>* predictLengths = &batch.queryLengths;
  if (mi.encoderDecoder()) {
    predictFrom = runDecoder(request, mi, batch, hidden, dev, r);
    predictLengths = &batch.decoderLengths;
    r.decoderOutput = withoutPadding(predictFrom, batch.decoderLengths);
  }
  // Every sentence gets its own candidates (the window shows those of the sentence on screen).
  r.nextTokens = nextTokenPredictions(predictFrom, *predictLengths, *m_family);
  if (!r.nextTokens.empty()) r.nextToken = r.nextTokens.front();
  addMaskFills(r, batch.tokens[0], hidden[0], *m_family, mi.name);
  if (request.keepLogits) {
    const uint64_t limit = request.limits.memoryLimitBytes;
    addLogits(r, predictFrom, *predictLengths, *m_family, limit > runBytes ? limit - runBytes : 0,
              mi.name);
  }
  for (std::string& n : m_family->notices()) r.notices.push_back(std::move(n));
  addNonFiniteNotices(r, allFinite(hidden) && (!mi.encoderDecoder() || allFinite(predictFrom)));
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

std::unique_ptr<Generation> TransformerModel::startGeneration(
    const GenerationRequest& request) const {
  return withTorchErrors(m_name, [&]() -> std::unique_ptr<Generation> {
    return std::make_unique<GenerationSession>(m_family, m_name, request);
  });
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
  run.keepScoreTerms = false;
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

}  // namespace attnscope
