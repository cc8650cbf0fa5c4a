// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/tiny_gpt.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "attnscope/safetensors.h"
#include "attnscope/utf8.h"
#include "runtime/batch_input.h"
#include "runtime/stopwatch.h"
#include "runtime/runtime_init.h"
#include "nn/state_dict.h"
#include "models/tiny_gpt_state.h"
#include "runtime/torch_convert.h"
#include "nn/toy_embedding.h"

namespace attnscope {
namespace {

std::shared_ptr<TinyGpt::State> makeState(const TinyGptConfig& config, std::vector<std::string> vocab) {
  ensureRuntime();
  auto s = std::make_shared<TinyGpt::State>();
  s->config = config;
  s->config.vocabSize = static_cast<int>(vocab.size());
  s->config.validate();
  s->vocab = std::move(vocab);
  for (std::size_t i = 0; i < s->vocab.size(); ++i) s->ids[s->vocab[i]] = static_cast<int64_t>(i);
  if (s->ids.size() != s->vocab.size()) throw Error(ErrorKind::Format, "tiny-gpt: the vocabulary has duplicate characters");
  s->module = TinyGptModule(s->config);
  return s;
}

/// The Model interface over shared tiny-GPT weights.
class TinyGptModel final : public Model {
 public:
  TinyGptModel(std::shared_ptr<TinyGpt::State> state, std::string name)
      : m_state(std::move(state)), m_name(std::move(name)) {}

  ModelInfo info() const override {
    const TinyGptConfig& c = m_state->config;
    ModelInfo i;
    i.kind = "tiny-gpt";
    i.name = m_name;
    i.variant = "per-head";
    i.layers = c.nLayer;
    i.heads = c.nHead;
    i.dModel = c.nEmbd;
    i.maxPositions = c.blockSize;
    i.causal = true;
    i.parameterBytes = parameterBytes(*m_state->module);
    return i;
  }

  std::vector<Token> tokenize(const std::string& text) const override { return m_state->tokenize(text); }
  std::vector<NamedTensor> parameters() const override { return stateDict(*m_state->module); }

  AttentionResult run(const RunRequest& request) const override {
    const Stopwatch t0;
    if (request.random) throw Error(ErrorKind::InvalidArgument, "random input needs the toy model (--model toy)");
    if (request.context) throw Error(ErrorKind::InvalidArgument, "cross-attention (--context) needs the toy model");
    const std::string device = resolveDevice(request.device);
    const TinyGptConfig& c = m_state->config;
    BatchInput batch = tokenizeBatch(request, [this](const std::string& s) { return m_state->tokenize(s); },
                                     c.blockSize);
    AttentionResult r;
    r.modelName = m_name;
    r.device = device;
    r.timings.tokenizeMs = t0.ms();
    const int64_t B = static_cast<int64_t>(batch.tokens.size()), T = batch.maxQuery;
    const uint64_t att = static_cast<uint64_t>(c.nLayer) * B * c.nHead * T * T * 4;
    checkMemory(att * (request.keepScores ? 4 : 3) + parameterBytes(*m_state->module) +
                    static_cast<uint64_t>(B) * T * (c.vocabSize + 8 * c.nEmbd) * 4,
                request.limits.memoryLimitBytes, "this input");
    throwIfCancelled(request);

    torch::Tensor idx = torch::zeros({B, T}, torch::kLong);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t t = 0; t < static_cast<int64_t>(batch.tokens[b].size()); ++t) idx[b][t] = batch.tokens[b][t].id;
    }
    std::lock_guard<std::mutex> lock(m_state->mutex);
    const Stopwatch t1;
    torch::NoGradGuard noGrad;
    const torch::Device dev(device);
    m_state->module->to(dev);
    m_state->module->eval();
    std::vector<LayerTrace> traces;
    std::vector<AttentionOutput> atts;
    torch::Tensor hidden;
    torch::Tensor logits = m_state->module->forward(idx.to(dev), buildMask(batch.keyLengths, T, T, true).to(dev),
                                                    &traces, &atts, &hidden);
    std::vector<torch::Tensor> a, s;
    for (const AttentionOutput& o : atts) {
      a.push_back(o.attention);
      if (request.keepScores) s.push_back(o.scores);
    }
    torch::Tensor attention = torch::stack(a, 0).to(torch::kCPU);  // [L, B, H, T, T]
    zeroPaddedQueries(attention, batch.queryLengths, 1, 3);
    r.attention = toFloatTensor(attention);
    if (request.keepScores) r.scores = toFloatTensor(torch::stack(s, 0));
    torch::Tensor out = hidden.to(torch::kCPU);
    zeroPaddedQueries(out, batch.queryLengths, 0, 1);
    r.output = toFloatTensor(out);
    r.input = toFloatTensor(m_state->module->token_embedding_table(idx.to(dev)));
    // Top 5 next characters after the last real token of item 0.
    const torch::Tensor probs = torch::softmax(logits[0][batch.queryLengths[0] - 1], -1).to(torch::kCPU);
    const auto top = probs.topk(std::min<int64_t>(5, c.vocabSize));
    for (int64_t k = 0; k < std::get<0>(top).size(0); ++k) {
      const int64_t id = std::get<1>(top)[k].item<int64_t>();
      Prediction p;
      p.token.id = id;
      p.token.text = m_state->vocab[static_cast<std::size_t>(id)];
      p.token.label = readableLabel(p.token.text);
      p.probability = std::get<0>(top)[k].item<float>();
      r.nextToken.push_back(p);
    }
    r.timings.forwardMs = t1.ms();
    r.traces = std::move(traces);
    moveTokensInto(std::move(batch), r);
    r.timings.totalMs = t0.ms();
    return r;
  }

 private:
  std::shared_ptr<TinyGpt::State> m_state;
  std::string m_name;
};

std::string metadataOr(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  const auto it = m.find(key);
  if (it == m.end()) {
    throw Error(ErrorKind::Format, path + ": not a tiny-gpt checkpoint (no '" + key + "' in __metadata__)");
  }
  return it->second;
}

}  // namespace

void TinyGptConfig::validate() const {
  const auto positive = [](int v, const char* name, int max) {
    if (v <= 0 || v > max) {
      throw Error(ErrorKind::InvalidArgument, std::string(name) + " must be between 1 and " +
                                                  std::to_string(max) + " (got " + std::to_string(v) + ")");
    }
  };
  positive(nLayer, "layers", 64);
  positive(nHead, "heads", 256);
  positive(nEmbd, "embd", 8192);
  positive(blockSize, "block", 65536);
  positive(vocabSize, "vocab_size", 1 << 22);
  if (nEmbd % nHead != 0) {
    throw Error(ErrorKind::InvalidArgument, "heads (" + std::to_string(nHead) + ") must divide embd (" +
                                                std::to_string(nEmbd) + ")");
  }
}

std::vector<Token> TinyGpt::State::tokenize(const std::string& text) const {
  const auto space = ids.find(" ");
  const int64_t fallback = space != ids.end() ? space->second : 0;
  std::vector<Token> out;
  for (const CodePoint& cp : decodeUtf8(text)) {
    Token t;
    t.text = text.substr(cp.byteBegin, cp.byteEnd - cp.byteBegin);
    t.byteBegin = cp.byteBegin;
    t.byteEnd = cp.byteEnd;
    const auto it = ids.find(t.text);
    t.unknown = it == ids.end();
    t.id = t.unknown ? fallback : it->second;
    t.label = t.unknown ? "<unk:" + readableLabel(t.text) + ">" : readableLabel(t.text);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<int64_t> TinyGpt::State::encodeKnown(const std::string& text) const {
  std::vector<int64_t> out;
  out.reserve(text.size());
  for (const CodePoint& cp : decodeUtf8(text, "the corpus")) {
    const auto it = ids.find(text.substr(cp.byteBegin, cp.byteEnd - cp.byteBegin));
    if (it != ids.end()) out.push_back(it->second);
  }
  return out;
}

TinyGpt::TinyGpt(std::shared_ptr<State> state) : m_state(std::move(state)) {}

TinyGpt TinyGpt::create(const TinyGptConfig& config, std::vector<std::string> vocab, uint64_t seed) {
  auto s = makeState(config, std::move(vocab));
  initialiseLikePyTorch(*s->module, seededGenerator(seed));
  return TinyGpt(s);
}

std::vector<std::string> TinyGpt::vocabularyOf(const std::string& text) {
  std::set<char32_t> cps;
  for (const CodePoint& cp : decodeUtf8(text, "the corpus")) cps.insert(cp.value);
  std::vector<std::string> vocab;
  for (char32_t c : cps) vocab.push_back(encodeUtf8(c));
  return vocab;
}

TinyGpt TinyGpt::load(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const auto& meta = file.metadata();
  if (metadataOr(meta, "attnscope.kind", path) != "tiny-gpt") {
    throw Error(ErrorKind::Format, path + ": attnscope.kind is '" + meta.at("attnscope.kind") + "', not 'tiny-gpt'");
  }
  TinyGptConfig c;
  std::vector<std::string> vocab;
  try {
    const auto cfg = nlohmann::json::parse(metadataOr(meta, "attnscope.config", path));
    c.nLayer = cfg.at("n_layer").get<int>();
    c.nHead = cfg.at("n_head").get<int>();
    c.nEmbd = cfg.at("n_embd").get<int>();
    c.blockSize = cfg.at("block_size").get<int>();
    c.vocabSize = cfg.at("vocab_size").get<int>();
    vocab = nlohmann::json::parse(metadataOr(meta, "attnscope.vocab", path)).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Format, path + ": bad attnscope.config or attnscope.vocab: " + e.what());
  }
  if (static_cast<int>(vocab.size()) != c.vocabSize) {
    throw Error(ErrorKind::Format, path + ": vocab_size is " + std::to_string(c.vocabSize) + " but the vocabulary has " +
                                       std::to_string(vocab.size()) + " characters");
  }
  std::shared_ptr<State> s;
  try {
    s = makeState(c, vocab);
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  std::vector<NamedTensor> weights;
  std::vector<std::string> ignored;
  for (const TensorInfo& info : file.tensors()) {
    // The chapter's Head registers its causal mask as a buffer `tril`: not a weight.
    if (info.name.size() > 5 && info.name.compare(info.name.size() - 5, 5, ".tril") == 0) continue;
    weights.push_back({info.name, file.readFloat(info.name)});
  }
  try {
    loadStateDict(*s->module, weights);
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  return TinyGpt(s);
}

TinyGpt TinyGpt::open(const std::string& source) {
  if (source != "default") return load(source);
  const std::string path = defaultModelPath();
  if (path.empty()) {
    throw Error(ErrorKind::Unavailable,
                "the bundled model resources/models/tiny-shakespeare.safetensors was not found "
                "(set ATTNSCOPE_DEFAULT_MODEL to its path)");
  }
  return load(path);
}

void TinyGpt::save(const std::string& path) const {
  const TinyGptConfig& c = m_state->config;
  const nlohmann::json cfg = {{"n_layer", c.nLayer}, {"n_head", c.nHead}, {"n_embd", c.nEmbd},
                              {"block_size", c.blockSize}, {"vocab_size", c.vocabSize}};
  std::lock_guard<std::mutex> lock(m_state->mutex);
  writeSafetensors(path, stateDict(*m_state->module),
                   {{"attnscope.kind", "tiny-gpt"},
                    {"attnscope.config", cfg.dump()},
                    {"attnscope.vocab", nlohmann::json(m_state->vocab).dump()}});
}

const TinyGptConfig& TinyGpt::config() const { return m_state->config; }
const std::vector<std::string>& TinyGpt::vocab() const { return m_state->vocab; }

std::shared_ptr<Model> TinyGpt::asModel(const std::string& name) const {
  return std::make_shared<TinyGptModel>(m_state, name);
}

TinyGpt TinyGpt::clone() const {
  auto s = makeState(m_state->config, m_state->vocab);
  std::lock_guard<std::mutex> lock(m_state->mutex);
  loadStateDict(*s->module, stateDict(*m_state->module));
  return TinyGpt(s);
}

double TinyGpt::validationLoss(const std::string& text, int maxWindows) const {
  const std::vector<int64_t> ids = m_state->encodeKnown(text);
  const int64_t block = m_state->config.blockSize;
  const int64_t windows = (static_cast<int64_t>(ids.size()) - 1) / block;
  if (windows <= 0) {
    throw Error(ErrorKind::InvalidArgument, "the validation text is too short: it needs more than " +
                                                std::to_string(block) + " known characters");
  }
  const int64_t use = maxWindows > 0 ? std::min<int64_t>(windows, maxWindows) : windows;
  std::lock_guard<std::mutex> lock(m_state->mutex);
  torch::NoGradGuard noGrad;
  m_state->module->to(torch::kCPU);
  m_state->module->eval();
  const torch::Tensor all = torch::from_blob(const_cast<int64_t*>(ids.data()), {static_cast<int64_t>(ids.size())},
                                             torch::kLong);
  const torch::Tensor mask = buildMask(std::vector<int>(1, static_cast<int>(block)), block, block, true);
  double total = 0;
  int64_t count = 0;
  const int64_t chunk = 64;
  for (int64_t w0 = 0; w0 < use; w0 += chunk) {
    std::vector<torch::Tensor> xs, ys;
    for (int64_t w = w0; w < std::min(use, w0 + chunk); ++w) {
      const int64_t start = (w * windows / use) * block;  // evenly spread windows
      xs.push_back(all.narrow(0, start, block));
      ys.push_back(all.narrow(0, start + 1, block));
    }
    const torch::Tensor x = torch::stack(xs), y = torch::stack(ys);
    const torch::Tensor logits = m_state->module->forward(x, mask);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    total += loss.item<double>();
    count += y.numel();
  }
  return total / static_cast<double>(count);
}

std::string TinyGpt::sample(const std::string& prompt, int tokens, uint64_t seed) const {
  if (tokens < 0) throw Error(ErrorKind::InvalidArgument, "tokens must not be negative");
  std::vector<int64_t> ids;
  for (const Token& t : m_state->tokenize(prompt)) ids.push_back(t.id);
  if (ids.empty()) ids.push_back(0);
  const int64_t block = m_state->config.blockSize;
  at::Generator gen = seededGenerator(seed);
  std::string out;
  std::lock_guard<std::mutex> lock(m_state->mutex);
  torch::NoGradGuard noGrad;
  m_state->module->to(torch::kCPU);
  m_state->module->eval();
  for (int i = 0; i < tokens; ++i) {
    const int64_t n = std::min<int64_t>(block, static_cast<int64_t>(ids.size()));
    std::vector<int64_t> window(ids.end() - n, ids.end());
    const torch::Tensor x = torch::from_blob(window.data(), {1, n}, torch::kLong).clone();
    const torch::Tensor logits = m_state->module->forward(x, buildMask({static_cast<int>(n)}, n, n, true));
    const torch::Tensor probs = torch::softmax(logits[0][n - 1], -1);
    const int64_t next = torch::multinomial(probs, 1, false, gen).item<int64_t>();
    ids.push_back(next);
    out += m_state->vocab[static_cast<std::size_t>(next)];
  }
  return out;
}

std::string defaultModelPath() {
  namespace fs = std::filesystem;
  const char* name = "tiny-shakespeare.safetensors";
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("ATTNSCOPE_DEFAULT_MODEL")) candidates.emplace_back(env);
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    candidates.push_back(fs::path(exe).parent_path() / "../share/attnscope/models" / name);
  }
#ifdef ATTNSCOPE_SOURCE_DIR
  candidates.push_back(fs::path(ATTNSCOPE_SOURCE_DIR) / "resources/models" / name);
#endif
  for (const fs::path& p : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return {};
}

}  // namespace attnscope
