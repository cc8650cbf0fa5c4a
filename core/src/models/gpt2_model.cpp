// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt2_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "attnscope/bpe_tokenizer.h"
#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "runtime/batch_input.h"
#include "runtime/stopwatch.h"
#include "attnscope/utf8.h"
#include "models/gpt2_transformer.h"
#include "models/gpt2_weights.h"
#include "runtime/runtime_init.h"
#include "nn/state_dict.h"
#include "runtime/torch_convert.h"

namespace attnscope {
namespace {

constexpr int kTopPredictions = 5;

std::string joinPath(const std::string& folder, const char* file) {
  return (std::filesystem::path(folder) / file).string();
}

std::string describe(const Gpt2Config& c) {
  return "n_layer " + std::to_string(c.nLayer) + ", n_head " + std::to_string(c.nHead) + ", n_embd " +
         std::to_string(c.nEmbd) + ", n_positions " + std::to_string(c.nPositions) +
         ", vocab_size " + std::to_string(c.vocabSize);
}

/// A pretrained GPT-2 (any size of the family) on the CPU. The module is read-only after
/// loading, so concurrent run() calls need no lock.
class Gpt2Model final : public Model {
 public:
  Gpt2Model(const std::string& folder, std::string name)
      : m_name(std::move(name)),
        m_config(Gpt2Config::fromFile(joinPath(folder, "config.json"))),
        m_tokenizer(BpeTokenizer::fromFiles(joinPath(folder, "vocab.json"), joinPath(folder, "merges.txt"))) {
    ensureRuntime();
    if (m_tokenizer.vocabSize() > static_cast<std::size_t>(m_config.vocabSize)) {
      throw Error(ErrorKind::Format, joinPath(folder, "vocab.json") + " has " +
                                         std::to_string(m_tokenizer.vocabSize()) +
                                         " tokens but config.json says vocab_size " +
                                         std::to_string(m_config.vocabSize));
    }
    const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::openFolder(folder);
    m_module = Gpt2Transformer(m_config);
    loadGpt2Weights(*m_module, checkpoint, describe(m_config));
    m_module->eval();
  }

  ModelInfo info() const override {
    ModelInfo i;
    i.kind = "gpt2";
    i.name = m_name;
    i.variant = "gpt2";
    i.layers = m_config.nLayer;
    i.heads = m_config.nHead;
    i.dModel = m_config.nEmbd;
    i.maxPositions = m_config.nPositions;
    i.causal = true;
    i.parameterBytes = parameterBytes(*m_module);
    return i;
  }

  std::vector<Token> tokenize(const std::string& text) const override { return m_tokenizer.encode(text); }

  std::vector<NamedTensor> parameters() const override { return stateDict(*m_module); }

  AttentionResult run(const RunRequest& request) const override {
    const Stopwatch t0;
    if (request.random) {
      throw Error(ErrorKind::InvalidArgument,
                  "GPT-2 reads text, not random input: give --text instead of --batch/--seq-len");
    }
    if (request.context) {
      throw Error(ErrorKind::InvalidArgument, "GPT-2 has no cross-attention: leave out the context");
    }
    if (request.device != DeviceKind::Auto && resolveDevice(request.device) != "cpu") {
      throw Error(ErrorKind::Unavailable, "GPT-2 models run on the CPU only for now");
    }
    AttentionResult r;
    r.modelName = m_name;
    r.device = "cpu";
    BatchInput batch = tokenizeBatch(
        request, [this](const std::string& s) { return m_tokenizer.encode(s); }, m_config.nPositions);
    r.timings.tokenizeMs = t0.ms();

    const int64_t L = m_config.nLayer, B = static_cast<int64_t>(batch.tokens.size()),
                  H = m_config.nHead, T = batch.maxQuery;
    checkMemory(estimateBytes(B, T, request.keepScores), request.limits.memoryLimitBytes,
                "GPT-2 on " + std::to_string(B) + " x " + std::to_string(T) + " tokens (" +
                    std::to_string(L) + " layers x " + std::to_string(H) + " heads of " +
                    std::to_string(T) + " x " + std::to_string(T) + " attention)");
    throwIfCancelled(request);

    const Stopwatch t1;
    c10::InferenceMode inference;
    torch::Tensor ids = torch::zeros({B, T}, torch::kLong);  // right-padded with id 0
    auto idAt = ids.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b) {
      const std::vector<Token>& tokens = batch.tokens[static_cast<std::size_t>(b)];
      for (std::size_t t = 0; t < tokens.size(); ++t) idAt[b][static_cast<int64_t>(t)] = tokens[t].id;
    }
    torch::Tensor x = m_module->embed(ids);  // [B, T, C]
    {
      torch::Tensor input = x.clone();
      zeroPaddedQueries(input, batch.queryLengths, 0, 1);
      r.input = toFloatTensor(input);
    }
    const torch::Tensor mask = buildMask(batch.keyLengths, T, T, /*causal=*/true);  // [B, 1, T, T]

    // Each layer's softmax writes straight into the result: no per-layer copies, no stacking.
    r.attention = FloatTensor({L, B, H, T, T});
    const torch::Tensor attention = torch::from_blob(r.attention.data.data(), {L, B, H, T, T});
    torch::Tensor scores;
    if (request.keepScores) {
      r.scores = FloatTensor({L, B, H, T, T});
      scores = torch::from_blob(r.scores.data.data(), {L, B, H, T, T});
    }
    for (int64_t l = 0; l < L; ++l) {
      throwIfCancelled(request);
      AttentionBuffers buffers{attention[l], scores.defined() ? scores[l] : torch::Tensor()};
      LayerTrace trace;
      trace.variant = "gpt2";
      x = m_module->blocks[static_cast<std::size_t>(l)]->forward(x, mask, buffers, &trace);
      torch::Tensor layerAttention = attention[l];
      zeroPaddedQueries(layerAttention, batch.queryLengths, 0, 2);
      r.traces.push_back(std::move(trace));
    }
    torch::Tensor hidden = m_module->ln_f->forward(x);  // [B, T, C]
    r.nextToken = predictNext(hidden[0][batch.queryLengths[0] - 1]);
    r.timings.forwardMs = t1.ms();

    zeroPaddedQueries(hidden, batch.queryLengths, 0, 1);
    r.output = toFloatTensor(hidden);
    moveTokensInto(std::move(batch), r);
    r.timings.totalMs = t0.ms();
    return r;
  }

 private:
  /// hidden: [C], the final hidden state of one position -> the most likely next tokens.
  std::vector<Prediction> predictNext(const torch::Tensor& hidden) const {
    const torch::Tensor probs = torch::softmax(m_module->logits(hidden), -1);  // [V]
    const auto top = probs.topk(std::min<int64_t>(kTopPredictions, probs.size(0)));
    const torch::Tensor values = std::get<0>(top), indices = std::get<1>(top);
    std::vector<Prediction> out;
    for (int64_t i = 0; i < values.size(0); ++i) {
      Prediction p;
      p.token.id = indices[i].item<int64_t>();
      p.probability = values[i].item<float>();
      if (static_cast<std::size_t>(p.token.id) < m_tokenizer.vocabSize()) {
        p.token.text = m_tokenizer.tokenBytes(p.token.id);
        p.token.label = readableLabel(p.token.text);
      } else {
        // config.json's vocab_size may exceed vocab.json (padded embeddings).
        p.token.label = "<id " + std::to_string(p.token.id) + ">";
        p.token.unknown = true;
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  /// The run's peak beyond what is already loaded: the [L, B, H, T, T] result (twice with scores),
  /// one layer's temporaries and the activations.
  uint64_t estimateBytes(int64_t B, int64_t T, bool keepScores) const {
    const uint64_t layerAttention = static_cast<uint64_t>(B) * m_config.nHead * T * T * 4;
    const uint64_t results = layerAttention * m_config.nLayer * (keepScores ? 2 : 1);
    const uint64_t transient = layerAttention * (keepScores ? 1 : 2);
    const uint64_t activations = static_cast<uint64_t>(B) * T * m_config.nEmbd * 4 * 16 +
                                 static_cast<uint64_t>(m_config.vocabSize) * 4 * 2;
    return parameterBytes(*m_module) + results + transient + activations;
  }

  std::string m_name;
  Gpt2Config m_config;
  BpeTokenizer m_tokenizer;
  // forward() only reads the parameters; torch's module API is simply not const-qualified.
  mutable Gpt2Transformer m_module{nullptr};
};

}  // namespace

std::shared_ptr<Model> openGpt2Folder(const std::string& folder, const std::string& name) {
  return std::make_shared<Gpt2Model>(folder, name);
}

}  // namespace attnscope
