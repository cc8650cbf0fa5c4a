// SPDX-License-Identifier: GPL-3.0-or-later
#include <chrono>
#include <cmath>
#include <mutex>

#include "attnscope/char_tokenizer.h"
#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/runtime.h"
#include "attnscope/toy_config.h"
#include "attnscope/word_tokenizer.h"
#include "runtime/batch_input.h"
#include "runtime/stopwatch.h"
#include "nn/fused_attention.h"
#include "nn/per_head_attention.h"
#include "runtime/runtime_init.h"
#include "nn/state_dict.h"
#include "nn/toy_embedding.h"
#include "runtime/torch_convert.h"

namespace attnscope {
namespace {

/// The single configurable attention layer with seeded weights (see makeToyModel).
class ToyModel final : public Model {
 public:
  explicit ToyModel(const ToyConfig& config) : m_config(config) {
    config.validate();
    ensureRuntime();
    if (config.variant == Variant::Fused) {
      m_fused = FusedAttention(config.inputDim, config.dModel, config.heads);
      m_module = m_fused.ptr().get();
    } else {
      m_perHead = PerHeadAttention(config.inputDim, config.dModel, config.heads);
      m_module = m_perHead.ptr().get();
    }
    initialiseLikePyTorch(*m_module, seededGenerator(config.seed));
    m_module->eval();
    if (config.tokenizer == TokenizerKind::Char) {
      m_tokenizer = std::make_unique<CharTokenizer>();
    } else {
      m_tokenizer = std::make_unique<WordTokenizer>();
    }
  }

  ToyModel(const ToyConfig& config, const std::vector<NamedTensor>& weights) : ToyModel(config) {
    loadStateDict(*m_module, weights);
  }

  ModelInfo info() const override {
    ModelInfo i;
    i.kind = "toy";
    i.name = std::string("toy ") + toString(m_config.variant) + " layer";
    i.variant = toString(m_config.variant);
    i.layers = 1;
    i.heads = m_config.heads;
    i.dModel = m_config.dModel;
    i.causal = m_config.mask == MaskKind::Causal;
    i.supportsContext = true;
    i.supportsRandomInput = true;
    i.parameterBytes = parameterBytes(*m_module);
    return i;
  }

  std::vector<Token> tokenize(const std::string& text) const override {
    return m_tokenizer->encode(text);
  }

  std::vector<NamedTensor> parameters() const override { return stateDict(*m_module); }

  AttentionResult run(const RunRequest& request) const override {
    const Stopwatch t0;
    const std::string device = resolveDevice(request.device);
    AttentionResult r;
    r.modelName = info().name;
    r.device = device;

    BatchInput batch;
    if (request.random) {
      batch = randomBatch(*request.random, request);
    } else {
      batch = tokenizeBatch(request, [this](const std::string& s) { return m_tokenizer->encode(s); });
    }
    r.timings.tokenizeMs = t0.ms();
    const int64_t B = static_cast<int64_t>(batch.tokens.size());
    const int64_t Tq = batch.maxQuery, Tk = batch.maxKey;
    checkMemory(estimateBytes(B, Tq, Tk, request.keepScores), request.limits.memoryLimitBytes,
                "this configuration");
    throwIfCancelled(request);

    std::lock_guard<std::mutex> lock(m_mutex);  // moving the module between devices mutates it
    const Stopwatch t1;
    torch::NoGradGuard noGrad;
    const torch::Device dev = toTorchDevice(device);
    if (m_moduleDevice != device) {
      m_module->to(dev);
      m_moduleDevice = device;
    }

    AttentionInput in;
    if (request.random) {
      in.x = torch::randn({B, Tq, m_config.inputDim}, seededGenerator(m_config.seed + 1));
    } else {
      in.x = embedTokens(batch.tokens, Tq, m_config.inputDim, m_config.seed);
      if (request.context) in.context = embedTokens(batch.contextTokens, Tk, m_config.inputDim, m_config.seed);
    }
    r.input = toFloatTensor(in.x);
    if (in.context.defined()) r.contextInput = toFloatTensor(in.context);
    in.x = in.x.to(dev);
    if (in.context.defined()) in.context = in.context.to(dev);
    in.mask = buildMask(batch.keyLengths, Tq, Tk, m_config.mask == MaskKind::Causal);
    if (in.mask.defined()) in.mask = in.mask.to(dev);
    if (m_config.scale == ScaleKind::HeadSize) {
      in.scale = 1.0 / std::sqrt(static_cast<double>(m_config.headSize()));
      in.scaleText = "hd**-0.5";
    } else {
      in.scale = 1.0 / std::sqrt(static_cast<double>(m_config.dModel));
      in.scaleText = "C**-0.5";
    }

    // On the CPU the softmax (and the scores, when kept) is written straight into the result:
    // no [B, H, Tq, Tk] copy afterwards, and no scores at all when they are not wanted.
    const bool direct = device == "cpu";
    const int64_t H = m_config.heads;
    if (direct) {
      r.attention = FloatTensor({1, B, H, Tq, Tk});
      in.buffers.attention = torch::from_blob(r.attention.data.data(), {B, H, Tq, Tk});
      if (request.keepScores) {
        r.scores = FloatTensor({1, B, H, Tq, Tk});
        in.buffers.scores = torch::from_blob(r.scores.data.data(), {B, H, Tq, Tk});
      }
    }

    LayerTrace trace;
    trace.variant = toString(m_config.variant);
    AttentionOutput out = m_fused ? m_fused->forward(in, &trace) : m_perHead->forward(in, &trace);
    if (device != "cpu") torch::cuda::synchronize();
    r.timings.forwardMs = t1.ms();

    torch::Tensor attention = out.attention.to(torch::kCPU).unsqueeze(0);  // [1, B, H, Tq, Tk]
    zeroPaddedQueries(attention, batch.queryLengths, 1, 3);
    torch::Tensor output = out.out.to(torch::kCPU);
    zeroPaddedQueries(output, batch.queryLengths, 0, 1);
    if (!direct) {
      r.attention = toFloatTensor(attention);
      if (request.keepScores) r.scores = toFloatTensor(out.scores.unsqueeze(0));
    }
    r.output = toFloatTensor(output);
    r.traces.push_back(std::move(trace));
    moveTokensInto(std::move(batch), r);
    r.timings.totalMs = t0.ms();
    return r;
  }

 private:
  static BatchInput randomBatch(const RandomInput& random, const RunRequest& request) {
    if (random.batch <= 0 || random.seqLen <= 0) {
      throw Error(ErrorKind::InvalidArgument, "batch and seq_len must be positive (got " +
                                                  std::to_string(random.batch) + " and " +
                                                  std::to_string(random.seqLen) + ")");
    }
    if (random.seqLen > request.limits.maxTokens) {
      throw Error(ErrorKind::ResourceLimit, "seq_len " + std::to_string(random.seqLen) +
                                                " is more than the limit of " +
                                                std::to_string(request.limits.maxTokens) +
                                                " tokens (raise --max-tokens)");
    }
    BatchInput b;
    std::vector<Token> positions;
    for (int t = 0; t < random.seqLen; ++t) {
      Token tok;
      tok.id = t;
      tok.text = tok.label = "x" + std::to_string(t);
      positions.push_back(tok);
    }
    b.tokens.assign(static_cast<std::size_t>(random.batch), positions);
    b.queryLengths.assign(static_cast<std::size_t>(random.batch), random.seqLen);
    b.keyLengths = b.queryLengths;
    b.maxQuery = b.maxKey = random.seqLen;
    return b;
  }

  uint64_t estimateBytes(int64_t B, int64_t Tq, int64_t Tk, bool keepScores) const {
    const uint64_t att = static_cast<uint64_t>(B) * m_config.heads * Tq * Tk * 4;
    // scores, scaled, softmax and the CPU copies of attention (and scores) live at once.
    const uint64_t attentionBytes = att * (keepScores ? 6 : 4);
    const uint64_t activations =
        static_cast<uint64_t>(B) * (Tq + Tk) * (m_config.inputDim + 4ull * m_config.dModel) * 4 * 2;
    return attentionBytes + activations + parameterBytes(*m_module);
  }

  ToyConfig m_config;
  mutable FusedAttention m_fused{nullptr};
  mutable PerHeadAttention m_perHead{nullptr};
  torch::nn::Module* m_module = nullptr;
  std::unique_ptr<Tokenizer> m_tokenizer;
  mutable std::mutex m_mutex;
  mutable std::string m_moduleDevice = "cpu";
};

}  // namespace

std::shared_ptr<Model> makeToyModel(const ToyConfig& config) {
  return std::make_shared<ToyModel>(config);
}

std::shared_ptr<Model> makeToyModel(const ToyConfig& config, const std::vector<NamedTensor>& weights) {
  return std::make_shared<ToyModel>(config, weights);
}

}  // namespace attnscope
