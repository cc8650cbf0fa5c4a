// SPDX-License-Identifier: GPL-3.0-or-later
// The chapter's character-level GPT: the tiny-gpt family.
#include "attnscope/tiny_gpt.h"

#include <cmath>
#include <set>

#include "attnscope/error.h"
#include "attnscope/utf8.h"
#include "models/tiny_gpt_state.h"
#include "models/transformer_model.h"
#include "nn/head_value_norms.h"
#include "nn/mlp.h"
#include "nn/state_dict.h"
#include "nn/toy_embedding.h"
#include "runtime/runtime_init.h"

namespace attnscope {

TinyGptFeedForwardImpl::TinyGptFeedForwardImpl(int nEmbd) {
  net = register_module(
      "net", torch::nn::Sequential(torch::nn::Linear(nEmbd, 4 * nEmbd), torch::nn::ReLU(),
                                   torch::nn::Linear(4 * nEmbd, nEmbd)));
}

TinyGptBlockImpl::TinyGptBlockImpl(int nEmbd, int nHead)
    : m_scale(1.0 / std::sqrt(static_cast<double>(nEmbd / nHead))) {
  sa = register_module("sa", PerHeadAttention(nEmbd, nEmbd, nHead));
  ffwd = register_module("ffwd", TinyGptFeedForward(nEmbd));
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({nEmbd})));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({nEmbd})));
}

torch::Tensor TinyGptBlockImpl::forward(const torch::Tensor& x, const AttentionMask& mask,
                                        TraceRecorder& rec, const AttentionBuffers* buffers) {
  const int xStep = rec.record("x", "x", "input", x);
  AttentionInput in;
  in.x = ln1(x);
  in.inputStep = rec.record("ln1", "self.ln1(x)", "layernorm", in.x, {xStep});
  in.mask = mask;
  in.scale = m_scale;
  in.scaleText = "hd**-0.5";
  in.keepAttention = buffers != nullptr;
  if (buffers) in.buffers = *buffers;
  const torch::Tensor h = x + sa->forward(in, rec).out;
  const int residual =
      rec.record("residual_1", "x + self.sa(self.ln1(x))", "add", h, {xStep, rec.last()});
  const torch::Tensor normed = ln2(h);
  const int normStep = rec.record("ln2", "self.ln2(x)", "layernorm", normed, {residual});
  torch::nn::LinearImpl* fc = ffwd->net[0]->as<torch::nn::Linear>();
  torch::nn::LinearImpl* proj = ffwd->net[2]->as<torch::nn::Linear>();
  const MlpProjection up{[&](const torch::Tensor& t) { return fc->forward(t); },
                         "self.ffwd.net[0](x)"};
  const MlpProjection down{[&](const torch::Tensor& t) { return proj->forward(t); },
                           "self.ffwd.net[2](h)"};
  int mlpStep = -1;
  const torch::Tensor out =
      h + feedForward(normed, up, Activation::Relu, down, nullptr, rec, normStep, &mlpStep);
  rec.record("residual_2", "x + self.ffwd(self.ln2(x))", "add", out, {residual, mlpStep});
  return out;
}

TinyGptModuleImpl::TinyGptModuleImpl(const TinyGptConfig& c) {
  token_embedding_table =
      register_module("token_embedding_table", torch::nn::Embedding(c.vocabSize, c.nEmbd));
  position_embedding_table =
      register_module("position_embedding_table", torch::nn::Embedding(c.blockSize, c.nEmbd));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int i = 0; i < c.nLayer; ++i) blocks->push_back(TinyGptBlock(c.nEmbd, c.nHead));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.nEmbd})));
  lm_head = register_module("lm_head", torch::nn::Linear(c.nEmbd, c.vocabSize));
}

torch::Tensor TinyGptModuleImpl::embed(const torch::Tensor& idx) {
  const torch::Tensor pos =
      torch::arange(idx.size(1), torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
  return token_embedding_table(idx) + position_embedding_table(pos);
}

torch::Tensor TinyGptModuleImpl::forward(const torch::Tensor& idx, const torch::Tensor& mask) {
  torch::Tensor x = embed(idx);
  TraceRecorder none(nullptr);
  for (std::size_t i = 0; i < blocks->size(); ++i)
    x = blocks[i]->as<TinyGptBlockImpl>()->forward(x, mask, none);
  return lm_head(ln_f(x));
}

namespace {

/// x: [B, T, C], the block's input -> [B, H, T] value norms of its heads. The heads' value layers
/// have no bias; proj.weight [C, C] is W_O transposed (y = z Wᵀ + b), so W_O^h is
/// proj.weight[:, h·hs .. (h+1)·hs]ᵀ.
torch::Tensor valueNorms(TinyGptBlockImpl& block, const torch::Tensor& x) {
  const torch::Tensor normed = block.ln1(x);
  std::vector<torch::Tensor> values;
  for (const auto& head : *block.sa->heads)
    values.push_back(head->as<HeadImpl>()->value(normed));           // [B, T, hs]
  const torch::Tensor wo = block.sa->proj->weight.t().contiguous();  // [C, C] as y = z W_O
  return headValueNorms(torch::stack(values, 1),
                        wo.view({static_cast<int64_t>(values.size()), -1, wo.size(1)}));
}

/// The family over a TinyGpt's shared state: training and the views see the same weights.
class TinyGptFamily final : public TransformerFamily {
 public:
  explicit TinyGptFamily(std::shared_ptr<TinyGpt::State> state) : m_state(std::move(state)) {}

  ModelInfo info() const override {
    const TinyGptConfig& c = m_state->config;
    ModelInfo i;
    i.kind = "tiny-gpt";
    i.name = "tiny-gpt";
    i.variant = "per-head";
    i.layers = c.nLayer;
    i.heads = c.nHead;
    i.kvHeads = c.nHead;
    i.dModel = c.nEmbd;
    i.maxPositions = c.blockSize;
    i.causal = true;
    i.parameterBytes = parameterBytes(*m_state->module);
    return i;
  }

  std::vector<Token> tokenize(const std::string& text) const override {
    return m_state->tokenize(text);
  }
  torch::nn::Module& module() override { return *m_state->module; }
  std::mutex& mutex() override { return m_state->mutex; }
  torch::Tensor embedIds(const torch::Tensor& ids) override { return m_state->module->embed(ids); }
  torch::Tensor embedIdsAt(const torch::Tensor& ids, int64_t start) override {
    // The chapter's embed() at positions start.. instead of 0..
    TinyGptModuleImpl& m = *m_state->module;
    const torch::Tensor pos = torch::arange(start, start + ids.size(1), ids.options());
    return m.token_embedding_table(ids) + m.position_embedding_table(pos);
  }
  bool supportsKvCache() const override { return true; }
  torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& ctx) override {
    auto* block = m_state->module->blocks[static_cast<std::size_t>(index)]->as<TinyGptBlockImpl>();
    if (ctx.valueNorms.defined()) ctx.valueNorms.copy_(valueNorms(*block, x));
    return block->forward(x, ctx.mask, *ctx.rec, &ctx.buffers);
  }
  bool supportsValueNorms() const override { return true; }
  torch::Tensor finalNorm(const torch::Tensor& x) override { return m_state->module->ln_f(x); }
  torch::Tensor logits(const torch::Tensor& hidden) override {
    return m_state->module->lm_head(hidden);
  }
  uint64_t activationBytesPerToken() const override {
    return (static_cast<uint64_t>(m_state->config.vocabSize) + 8ull * m_state->config.nEmbd) * 4;
  }
  Token vocabularyToken(int64_t id) const override {
    Token t;
    t.id = id;
    t.text = m_state->vocab[static_cast<std::size_t>(id)];
    t.label = readableLabel(t.text);
    return t;
  }
  void checkRequest(const RunRequest& request) const override {
    if (request.random)
      throw Error(ErrorKind::InvalidArgument, "random input needs the toy model (--model toy)");
    if (request.context)
      throw Error(ErrorKind::InvalidArgument, "cross-attention (--context) needs the toy model");
  }

 private:
  std::shared_ptr<TinyGpt::State> m_state;
};

}  // namespace

std::shared_ptr<TinyGpt::State> TinyGpt::State::make(const TinyGptConfig& config,
                                                     std::vector<std::string> vocab) {
  ensureRuntime();
  auto s = std::make_shared<State>();
  s->config = config;
  s->config.vocabSize = static_cast<int>(vocab.size());
  s->config.validate();
  s->vocab = std::move(vocab);
  for (std::size_t i = 0; i < s->vocab.size(); ++i) s->ids[s->vocab[i]] = static_cast<int64_t>(i);
  if (s->ids.size() != s->vocab.size())
    throw Error(ErrorKind::Format, "tiny-gpt: the vocabulary has duplicate characters");
  s->module = TinyGptModule(s->config);
  return s;
}

void TinyGptConfig::validate() const {
  const auto positive = [](int v, const char* name, int max) {
    if (v <= 0 || v > max) {
      throw Error(ErrorKind::InvalidArgument, std::string(name) + " must be between 1 and " +
                                                  std::to_string(max) + " (got " +
                                                  std::to_string(v) + ")");
    }
  };
  positive(nLayer, "layers", 64);
  positive(nHead, "heads", 256);
  positive(nEmbd, "embd", 8192);
  positive(blockSize, "block", 65536);
  positive(vocabSize, "vocab_size", 1 << 22);
  if (nEmbd % nHead != 0) {
    throw Error(
        ErrorKind::InvalidArgument,
        "heads (" + std::to_string(nHead) + ") must divide embd (" + std::to_string(nEmbd) + ")");
  }
}

std::string TinyGptConfig::describe() const {
  return "n_layer " + std::to_string(nLayer) + ", n_head " + std::to_string(nHead) + ", n_embd " +
         std::to_string(nEmbd) + ", block_size " + std::to_string(blockSize) + ", vocab_size " +
         std::to_string(vocabSize);
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

namespace {

// Calls visit(character) for each character of valid UTF-8 without decoding the whole text into
// a vector first (24 bytes per character for a corpus).
template <typename Visit>
void forEachCharacter(std::string_view text, const char* what, Visit&& visit) {
  requireValidUtf8(text, what);
  for (std::size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    const std::size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    visit(text.substr(at, n));
    at += n;
  }
}

}  // namespace

std::vector<int32_t> TinyGpt::State::encodeKnown(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size());
  std::string key;
  forEachCharacter(text, "the corpus", [&](std::string_view c) {
    key.assign(c);
    const auto it = ids.find(key);
    if (it != ids.end()) out.push_back(static_cast<int32_t>(it->second));
  });
  out.shrink_to_fit();
  return out;
}

TinyGpt::TinyGpt(std::shared_ptr<State> state) : m_state(std::move(state)) {}

TinyGpt TinyGpt::create(const TinyGptConfig& config, std::vector<std::string> vocab,
                        uint64_t seed) {
  auto s = State::make(config, std::move(vocab));
  initialiseLikePyTorch(*s->module, seededGenerator(seed));
  return TinyGpt(s);
}

std::vector<std::string> TinyGpt::vocabularyOf(const std::string& text) {
  // UTF-8 byte order is code-point order, so sorting the strings sorts the code points.
  std::set<std::string, std::less<>> chars;
  forEachCharacter(text, "the corpus", [&](std::string_view c) {
    if (chars.find(c) == chars.end()) chars.emplace(c);
  });
  return std::vector<std::string>(chars.begin(), chars.end());
}

const TinyGptConfig& TinyGpt::config() const { return m_state->config; }
const std::vector<std::string>& TinyGpt::vocab() const { return m_state->vocab; }

std::shared_ptr<Model> TinyGpt::asModel(const std::string& name) const {
  return std::make_shared<TransformerModel>(std::make_shared<TinyGptFamily>(m_state), name);
}

TinyGpt TinyGpt::clone() const {
  auto s = State::make(m_state->config, m_state->vocab);
  std::lock_guard<std::mutex> lock(m_state->mutex);
  loadStateDict(*s->module, stateDict(*m_state->module));
  return TinyGpt(s);
}

}  // namespace attnscope
