// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/generation_session.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "attnscope/sampling.h"
#include "models/layer_stack.h"
#include "runtime/batch_input.h"
#include "runtime/flush_denormals.h"
#include "runtime/runtime_init.h"
#include "runtime/stopwatch.h"
#include "runtime/torch_convert.h"
#include "runtime/torch_errors.h"

namespace attnscope {

namespace {

/// The layers a step runs: the decoder's of an encoder-decoder.
int64_t stepLayers(const ModelInfo& mi) {
  return mi.encoderDecoder() ? mi.decoderLayers : mi.layers;
}

}  // namespace

uint64_t GenerationSession::memoryBytes(const ModelInfo& mi, int64_t headDim, int64_t prompt,
                                        int64_t total, bool keepAttention, int64_t source) {
  const auto L = static_cast<uint64_t>(stepLayers(mi)), H = static_cast<uint64_t>(mi.heads);
  const auto T = static_cast<uint64_t>(std::max<int64_t>(total, 0));
  const auto S = static_cast<uint64_t>(std::max<int64_t>(source, 0));
  // Keys and values (cross-attention's too), and the storage's doubling past a reserve() that
  // fell short (none here).
  uint64_t bytes = 2 * L * H * (T + S) * static_cast<uint64_t>(headDim) * sizeof(float);
  if (keepAttention) {
    // Every step's row over its keys: sum over T_step = prompt..total-1 of L·H·T_step, and one
    // cross-attention row of S per step.
    const auto first = static_cast<uint64_t>(std::max<int64_t>(prompt, 1));
    const uint64_t steps = T > first ? T - first : 0;
    bytes += L * H * (first + T - 1) * steps / 2 * sizeof(float);
    bytes += L * H * S * steps * sizeof(float);
  }
  return bytes;
}

GenerationSession::GenerationSession(std::shared_ptr<TransformerFamily> family,
                                     std::string modelName, const GenerationRequest& request)
    : m_family(std::move(family)),
      m_name(std::move(modelName)),
      m_info(m_family->info()),
      m_request(request),
      m_cache(stepLayers(m_info)),
      m_encoderDecoder(m_info.encoderDecoder()),
      m_crossCache(m_encoderDecoder ? m_info.decoderLayers : 0) {
  const ModelInfo& mi = m_info;
  if ((!mi.causal && !m_encoderDecoder) || !m_family->supportsKvCache())
    throw Error(ErrorKind::InvalidArgument,
                m_name + " cannot generate step by step: " +
                    (!mi.causal && !m_encoderDecoder ? "it is not a causal language model"
                                                     : "its family has no key/value cache"));
  if (request.maxNewTokens < 0)
    throw Error(ErrorKind::InvalidArgument, "the number of new tokens must not be negative");
  if (request.candidates < 0)
    throw Error(ErrorKind::InvalidArgument, "the number of candidates must not be negative");
  // An encoder-decoder's prompt is its source; its decoder starts from the start token.
  (m_encoderDecoder ? m_source : m_tokens) = m_family->tokenize(request.text);
  if (m_encoderDecoder) m_tokens = {m_family->decoderStartToken()};
  m_promptLength = static_cast<int>(m_tokens.size());
  if (m_tokens.empty() || (m_encoderDecoder && m_source.empty()))
    throw Error(ErrorKind::InvalidArgument, "the prompt has no tokens: give some text");
  const int64_t limit = mi.maxPositions > 0 ? std::min(mi.maxPositions, request.limits.maxTokens)
                                            : request.limits.maxTokens;
  const auto prompt = static_cast<int64_t>(m_encoderDecoder ? m_source.size() : m_tokens.size());
  if (prompt > limit)
    throw Error(
        ErrorKind::ResourceLimit,
        "the prompt has " + std::to_string(prompt) + " tokens, more than the " +
            std::to_string(limit) +
            (limit == request.limits.maxTokens && (mi.maxPositions <= 0 || mi.maxPositions > limit)
                 ? " of the token limit (raise --max-tokens)"
                 : " positions " + m_name + " has"));
  const int64_t T0 = m_promptLength;
  const int64_t total = std::min<int64_t>(T0 + request.maxNewTokens, limit);
  const int64_t headDim = std::max(1, mi.dModel / std::max(1, mi.heads));
  const auto source = static_cast<int64_t>(m_source.size());
  checkMemory(
      memoryBytes(mi, headDim, T0, total, request.keepAttention, source) +
          // the encoder's output, kept for the steps
          static_cast<uint64_t>(source) * static_cast<uint64_t>(mi.dModel) * sizeof(float) +
          static_cast<uint64_t>(mi.parameterBytes - std::min(mi.parameterBytes, mi.mappedBytes)),
      request.limits.memoryLimitBytes,
      m_name + " generating " + std::to_string(total - T0) + " tokens after " + std::to_string(T0) +
          " (the key/value cache" +
          (request.keepAttention ? " and every step's attention row" : "") + ")");
  m_cache.reserve(total);
  m_run.keepScores = false;
  m_run.cancel = request.cancel;
  m_run.device = request.device;
  m_run.limits = request.limits;
  m_device = torch::Device(resolveDevice(request.device));
  m_end = m_family->endTokenId();
  // A model without a language-model head is refused now, not after the prompt has run.
  std::lock_guard<std::mutex> lock(m_family->mutex());
  prepareModules();
  c10::InferenceMode inference;
  const torch::Tensor probe =
      m_family->logits(torch::zeros({mi.dModel}, torch::TensorOptions().device(m_device)));
  if (!probe.defined())
    throw Error(ErrorKind::InvalidArgument,
                m_name +
                    " has no language-model head (the checkpoint holds the decoder only): it "
                    "cannot generate");
  m_vocabulary = probe.size(-1);
}

bool GenerationSession::canStep() const {
  const auto T = static_cast<int64_t>(m_tokens.size());
  if (T >= m_request.limits.maxTokens) return false;
  return m_info.maxPositions <= 0 || T < m_info.maxPositions;
}

void GenerationSession::prepareModules() {
  torch::NoGradGuard noGrad;
  torch::nn::Module& module = m_family->module();
  const auto params = module.parameters();
  if (!params.empty() && params.front().device() != m_device) module.to(m_device);
  module.eval();
}

void GenerationSession::encodeSource() {
  const auto Ts = static_cast<int64_t>(m_source.size());
  std::vector<int64_t> ids;
  for (const Token& t : m_source) ids.push_back(t.id);
  const torch::Tensor idTensor = torch::tensor(ids, torch::kLong).view({1, Ts}).to(m_device);
  const std::vector<int> lengths{static_cast<int>(Ts)};
  LayerStack encoder;
  encoder.layers = m_info.layers;
  encoder.name = "encoder";
  // As TransformerModel::runEncoder for one unpadded item.
  encoder.mask = deviceMask(lengths, Ts, Ts, false, m_info.slidingWindow, m_device);
  encoder.positions =
      torch::arange(Ts, torch::TensorOptions().dtype(torch::kLong).device(m_device));
  encoder.queryLengths = &lengths;
  encoder.keyLengths = &lengths;
  encoder.layer = [&](int i, const torch::Tensor& h, LayerContext& c) {
    return m_family->layer(i, h, c);
  };
  m_memory = m_family->finalNorm(encoder.run(m_family->embedIds(idTensor), m_run, m_info.variant));
}

torch::Tensor GenerationSession::forward(int64_t start, int64_t n, GroupWriter* writer,
                                         GroupWriter* crossWriter) {
  std::vector<int64_t> ids(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<std::size_t>(i)] = m_tokens[static_cast<std::size_t>(start + i)].id;
  const torch::Tensor idTensor = torch::tensor(ids, torch::kLong).view({1, n}).to(m_device);
  const torch::Tensor x = m_encoderDecoder ? m_family->embedDecoderIdsAt(idTensor, start)
                                           : m_family->embedIdsAt(idTensor, start);
  const int64_t T = start + n;
  const std::vector<int> queryLengths{static_cast<int>(n)}, keyLengths{static_cast<int>(T)},
      sourceLengths{static_cast<int>(m_source.size())};
  LayerStack stack;
  stack.layers = stepLayers(m_info);
  stack.mask = deviceMask(keyLengths, n, T, /*causal=*/true,
                          m_encoderDecoder ? 0 : m_info.slidingWindow, m_device, start);
  stack.positions =
      torch::arange(start, T, torch::TensorOptions().dtype(torch::kLong).device(m_device));
  // The step's passes are one call to Hugging Face: its rotary update reads the whole length.
  stack.sequenceLength = static_cast<int64_t>(m_tokens.size());
  stack.queryLengths = &queryLengths;
  stack.keyLengths = &keyLengths;
  stack.self = writer;
  stack.cache = &m_cache;
  if (m_encoderDecoder) {
    stack.name = "decoder";
    stack.context = m_memory;  // one unpadded source: no cross mask
    stack.contextLengths = &sourceLengths;
    stack.cross = crossWriter;
    stack.crossCache = &m_crossCache;
    stack.layer = [&](int i, const torch::Tensor& h, LayerContext& c) {
      return m_family->decoderLayer(i, h, c);
    };
    return m_family->decoderFinalNorm(stack.run(x, m_run, m_info.variant));
  }
  stack.layer = [&](int i, const torch::Tensor& h, LayerContext& c) {
    return m_family->layer(i, h, c);
  };
  return m_family->finalNorm(stack.run(x, m_run, m_info.variant));
}

GenerationStep GenerationSession::step(const StepOptions& options) {
  return withTorchErrors(m_name, [&] { return stepUnguarded(options); });
}

GenerationStep GenerationSession::stepUnguarded(const StepOptions& options) {
  const Stopwatch t0;
  options.sampling.validate();
  if (!canStep())
    throw Error(ErrorKind::ResourceLimit,
                m_name + " cannot take another token: " + std::to_string(m_tokens.size()) +
                    " tokens fill " +
                    (m_info.maxPositions > 0 && m_info.maxPositions <= m_request.limits.maxTokens
                         ? "its " + std::to_string(m_info.maxPositions) + " positions"
                         : "the token limit (raise --max-tokens)"));
  if (options.forcedId && (*options.forcedId < 0 || *options.forcedId >= m_vocabulary))
    throw Error(ErrorKind::InvalidArgument,
                "the forced token id " + std::to_string(*options.forcedId) +
                    " is outside the vocabulary (0.." + std::to_string(m_vocabulary - 1) + ")");
  throwIfCancelled(m_run);
  const auto T = static_cast<int64_t>(m_tokens.size());
  const int64_t cached = m_cache.length();
  const int64_t pending = T - cached;  // positions not yet through the cache, >= 1
  // About 2 flops per parameter and new token: a one-token step stays on one thread when small.
  const RunThreads threads(2.0 * static_cast<double>(m_info.parameterBytes / 4) *
                           static_cast<double>(pending));
  const FlushDenormals flushDenormals;
  GenerationStep out;
  std::vector<float> logits;
  {
    std::lock_guard<std::mutex> lock(m_family->mutex());
    prepareModules();
    c10::InferenceMode inference;
    // The prompt but its last token: no attention kept (a [L, H, T, T] block at T = 1000 would
    // be gigabytes); the last input token then runs alone and keeps its row.
    if (m_encoderDecoder && !m_memory.defined()) encodeSource();
    if (pending > 1) forward(cached, pending - 1, nullptr, nullptr);
    const int64_t L = stepLayers(m_info), Ts = static_cast<int64_t>(m_source.size());
    const bool keep = m_request.keepAttention;
    AttentionGroup group, crossGroup;
    GroupWriter writer, crossWriter;
    if (keep) {
      writer = GroupWriter(group, L, 1, m_info.heads, 1, T, m_run, m_device);
      if (m_encoderDecoder)
        crossWriter = GroupWriter(crossGroup, L, 1, m_info.heads, 1, Ts, m_run, m_device);
    }
    const torch::Tensor h = forward(T - 1, 1, keep ? &writer : nullptr,
                                    keep && m_encoderDecoder ? &crossWriter : nullptr);
    const torch::Tensor l = m_family->logits(h[0][0]).to(torch::kCPU, torch::kFloat).contiguous();
    logits.assign(l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
    if (keep) {
      out.attention = std::move(group.attention);
      // [L, 1, H, 1, T] -> [L, H, T]
      out.attention.shape = {L, m_info.heads, T};
      if (m_encoderDecoder) {
        out.crossAttention = std::move(crossGroup.attention);
        out.crossAttention.shape = {L, m_info.heads, Ts};
      }
    }
  }
  std::vector<int64_t> previous(m_tokens.size());
  std::transform(m_tokens.begin(), m_tokens.end(), previous.begin(),
                 [](const Token& t) { return t.id; });
  const std::vector<double> model = softmaxDistribution(logits);
  const std::vector<double> after = samplingDistribution(logits, previous, options.sampling);
  int64_t id = 0;
  if (options.forcedId) {
    id = *options.forcedId;
    out.forced = true;
  } else {
    if (!options.sampling.greedy() && m_seed != options.sampling.seed) {
      m_rng.seed(options.sampling.seed);
      m_seed = options.sampling.seed;
    }
    id = drawToken(after, options.sampling, m_rng);
  }
  out.entropy = entropyNats(model);
  out.entropyAfter = entropyNats(after);
  std::vector<int64_t> order(model.size());
  std::iota(order.begin(), order.end(), 0);
  const auto k =
      std::min<std::size_t>(static_cast<std::size_t>(m_request.candidates), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](int64_t a, int64_t b) {
                      return model[static_cast<std::size_t>(a)] >
                             model[static_cast<std::size_t>(b)];
                    });
  for (std::size_t i = 0; i < k; ++i) {
    const auto c = static_cast<std::size_t>(order[i]);
    out.candidates.push_back({m_family->vocabularyToken(order[i]), after[c], model[c]});
  }
  out.token = m_family->vocabularyToken(id);
  out.position = static_cast<int>(T);
  out.end = m_end && id == *m_end;
  m_tokens.push_back(out.token);
  out.milliseconds = t0.ms();
  return out;
}

}  // namespace attnscope
