// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "attnscope/error.h"
#include "attnscope/folder_tokenizer.h"
#include "attnscope/model_catalog.h"
#include "attnscope/model_spec.h"
#include "attnscope/runtime.h"
#include "expect_close.h"
#include "expect_error.h"
#include "reference_gpt2.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::TinyGpt2;
using test::TinyStorage;

RunRequest textRequest(std::vector<std::string> texts) {
  RunRequest r;
  r.texts = std::move(texts);
  r.device = DeviceKind::Cpu;
  return r;
}

std::shared_ptr<Model> open(const std::string& source) {
  ModelSpec spec;
  spec.source = source;
  return openModel(spec);
}

float at(const AttentionResult& r, int l, int b, int h, int q, int k) {
  return r.group().headMatrix(l, b, h)[static_cast<std::size_t>(q) * r.group().keys() + k];
}

std::vector<int64_t> idsOf(const std::vector<Token>& tokens) {
  std::vector<int64_t> ids;
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

/// Compares batch item `b` of a run with the plain-loop reference on that item's tokens.
void expectMatchesReference(const AttentionResult& r, int b,
                            const std::vector<NamedTensor>& weights, const TinyGpt2& spec) {
  const std::vector<int64_t> ids = idsOf(r.group().tokens[static_cast<std::size_t>(b)]);
  const test::ReferenceGpt2 ref = test::referenceGpt2(weights, spec.layers, spec.heads, ids);
  const int T = static_cast<int>(ids.size()), C = spec.embd;
  double worst = 0;
  for (int l = 0; l < spec.layers; ++l)
    for (int h = 0; h < spec.heads; ++h)
      for (int q = 0; q < T; ++q)
        for (int k = 0; k < T; ++k) {
          const double want =
              ref.attention[((static_cast<std::size_t>(l) * spec.heads + h) * T + q) * T + k];
          worst = std::max(worst, std::abs(at(r, l, b, h, q, k) - want));
        }
  EXPECT_LT(worst, 1e-4) << "attention differs from the reference";
  worst = 0;
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      const float got = r.output.data[(static_cast<std::size_t>(b) * r.output.dim(1) + t) * C + c];
      worst =
          std::max(worst, test::closeError(got, ref.hidden[static_cast<std::size_t>(t) * C + c]));
    }
  // Hidden states can be far above 1: |diff| / max(1, |want|), as expect_close.h.
  EXPECT_LT(worst, 1e-4) << "final hidden state differs from the reference";
  if (b == 0) {
    // softmax over the reference logits, then the top 5.
    std::vector<double> p = ref.lastLogits;
    const double top = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - top));
    for (double& v : p) v /= sum;
    ASSERT_EQ(r.nextToken.size(), 5u);
    for (std::size_t i = 0; i < r.nextToken.size(); ++i) {
      const Prediction& pred = r.nextToken[i];
      EXPECT_NEAR(pred.probability, p[static_cast<std::size_t>(pred.token.id)], 1e-5);
      if (i > 0) {
        EXPECT_LE(pred.probability, r.nextToken[i - 1].probability);
      }
    }
    EXPECT_NEAR(r.nextToken[0].probability, *std::max_element(p.begin(), p.end()), 1e-5);
  }
}

void expectCausalRowsSumToOne(const AttentionResult& r) {
  for (int l = 0; l < r.group().layers(); ++l)
    for (int b = 0; b < r.group().batch(); ++b)
      for (int h = 0; h < r.group().heads(); ++h)
        for (int q = 0; q < r.group().queries(); ++q) {
          double sum = 0;
          for (int k = 0; k < r.group().keys(); ++k) {
            const float a = at(r, l, b, h, q, k);
            if (k > q || k >= r.group().keyLengths[static_cast<std::size_t>(b)]) {
              EXPECT_EQ(a, 0.0f);
            }
            sum += a;
          }
          if (q < r.group().queryLengths[static_cast<std::size_t>(b)]) {
            EXPECT_NEAR(sum, 1.0, 1e-5);
          } else {
            EXPECT_EQ(sum, 0.0) << "padded query rows are zero";
          }
        }
}

struct Variant {
  const char* name;
  bool prefix;
  TinyStorage storage;
};

class Gpt2Layouts : public ::testing::TestWithParam<Variant> {};

TEST_P(Gpt2Layouts, LoadsAndMatchesThePlainLoopReference) {
  TempDir dir;
  TinyGpt2 spec;
  spec.prefix = GetParam().prefix;
  spec.storage = GetParam().storage;
  const auto weights = test::writeTinyGpt2(dir.path("model"), spec);
  const auto model = open(dir.path("model"));
  const ModelInfo info = model->info();
  EXPECT_EQ(info.kind, "gpt2");
  EXPECT_EQ(info.name, "model");
  EXPECT_EQ(info.layers, 2);
  EXPECT_EQ(info.heads, 4);
  EXPECT_EQ(info.maxPositions, 32);

  const AttentionResult r = model->run(textRequest({"hello the world"}));
  ASSERT_EQ(r.group().attention.shape,
            (std::vector<int64_t>{2, 1, 4, r.group().queries(), r.group().queries()}));
  EXPECT_EQ(r.group().scores.shape, r.group().attention.shape);
  EXPECT_EQ(r.output.shape, (std::vector<int64_t>{1, r.group().queries(), 16}));
  expectCausalRowsSumToOne(r);
  expectMatchesReference(r, 0, weights, spec);
}

INSTANTIATE_TEST_SUITE_P(Gpt2, Gpt2Layouts,
                         ::testing::Values(Variant{"prefixed", true, TinyStorage::F32},
                                           Variant{"bare", false, TinyStorage::F32},
                                           Variant{"f16", true, TinyStorage::F16},
                                           Variant{"bf16", false, TinyStorage::BF16},
                                           Variant{"sharded", false, TinyStorage::Sharded}),
                         [](const ::testing::TestParamInfo<Variant>& i) {
                           return std::string(i.param.name);
                         });

class Gpt2Fixture : public ::testing::Test {
 protected:
  void SetUp() override { m_weights = test::writeTinyGpt2(m_dir.path("model"), m_spec); }
  std::string folder() const { return m_dir.path("model"); }

  TempDir m_dir;
  TinyGpt2 m_spec;
  std::vector<NamedTensor> m_weights;
};

// A tied checkpoint may keep only the LM head's name for the embedding (safetensors stores one
// of two shared tensors); the loader reads wte from it and attention is unchanged.
TEST_F(Gpt2Fixture, TiedEmbeddingStoredOnlyAsTheLmHeadIsUsedForWte) {
  std::vector<NamedTensor> renamed;
  for (const NamedTensor& t : m_weights) {
    renamed.push_back(
        {t.name == "wte.weight" ? "lm_head.weight" : "transformer." + t.name, t.tensor});
  }
  writeSafetensors((fs::path(folder()) / "model.safetensors").string(), renamed);
  const AttentionResult r = open(folder())->run(textRequest({"hello the world"}));
  expectMatchesReference(r, 0, m_weights, m_spec);
  ASSERT_FALSE(r.nextToken.empty());
}

// A folder with tokenizer.json takes its tokenizer from there (Hugging Face's pipeline) instead of
// vocab.json + merges.txt; for GPT-2's settings both give the same ids and spans.
TEST_F(Gpt2Fixture, TokenizerJsonIsPreferredAndAgreesWithVocabAndMerges) {
  const auto before = open(folder())->tokenize("he the cat's  hat\n");
  nlohmann::json merges = nlohmann::json::array();
  std::istringstream lines(test::tinyMerges());
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != '#') merges.push_back(line);
  }
  const nlohmann::json tok = {{"version", "1.0"},
                              {"added_tokens", nlohmann::json::array()},
                              {"normalizer", nullptr},
                              {"pre_tokenizer",
                               {{"type", "ByteLevel"},
                                {"add_prefix_space", false},
                                {"trim_offsets", true},
                                {"use_regex", true}}},
                              {"post_processor", nullptr},
                              {"decoder", {{"type", "ByteLevel"}}},
                              {"model",
                               {{"type", "BPE"},
                                {"vocab", nlohmann::json::parse(test::tinyVocabJson())},
                                {"merges", merges}}}};
  std::ofstream(fs::path(folder()) / "tokenizer.json") << tok.dump();
  fs::remove(fs::path(folder()) / "vocab.json");
  fs::remove(fs::path(folder()) / "merges.txt");
  const auto after = open(folder())->tokenize("he the cat's  hat\n");
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].id, before[i].id);
    EXPECT_EQ(after[i].label, before[i].label);
    EXPECT_EQ(after[i].byteBegin, before[i].byteBegin);
    EXPECT_EQ(after[i].byteEnd, before[i].byteEnd);
  }
  std::ofstream(fs::path(folder()) / "tokenizer.json") << R"({"model": {"type": "Foo"}})";
  test::expectError([&] { open(folder()); }, ErrorKind::Format,
                    "model: type \"Foo\" is not supported");
}

// SentencePiece runs in processes that also hold LibTorch (their two protobuf copies must not
// meet): a folder with only a spiece.model tokenizes through it.
TEST(FolderTokenizer, SentencePieceModelBesideLibTorch) {
  TempDir dir;
  fs::create_directories(dir.path("t5"));
  fs::copy_file(fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / "unigram.model",
                fs::path(dir.path("t5")) / "spiece.model");
#if defined(__SANITIZE_ADDRESS__)
  // The loader needs RTLD_DEEPBIND, which AddressSanitizer does not allow: it must say so.
  test::expectError([&] { FolderTokenizer::open(dir.path("t5")).encode("Hello"); },
                    ErrorKind::Unavailable, "RTLD_DEEPBIND");
  GTEST_SKIP() << "libsentencepiece cannot load beside LibTorch under AddressSanitizer";
#endif
  const FolderTokenizer tok = FolderTokenizer::open(dir.path("t5"));
  EXPECT_EQ(tok.name(), "sentencepiece");
  const std::vector<Token> tokens = tok.encode("Hello world");
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens[0].id, 233);  // spm_encode's ids, tests/data/tokenizers/reference/spm.json
  EXPECT_EQ(tokens[0].label, "␣H");
  fs::remove(fs::path(dir.path("t5")) / "spiece.model");
  test::expectError([&] { FolderTokenizer::open(dir.path("t5")); }, ErrorKind::Io,
                    "no tokenizer in");
}

TEST_F(Gpt2Fixture, TokensUseTheFolderBpe) {
  const auto model = open(folder());
  const std::vector<Token> tokens = model->tokenize("he the");
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0].id, 256);
  EXPECT_EQ(tokens[1].id, 258);
  EXPECT_EQ(tokens[1].label, "␣the");
}

TEST_F(Gpt2Fixture, PaddedBatchItemsMatchTheirOwnReference) {
  const auto model = open(folder());
  const AttentionResult r = model->run(textRequest({"hi", "the cat sat on the mat", "a b"}));
  ASSERT_EQ(r.group().batch(), 3);
  EXPECT_EQ(r.group().queries(), static_cast<int>(r.group().tokens[1].size()));
  expectCausalRowsSumToOne(r);
  for (int b = 0; b < 3; ++b) expectMatchesReference(r, b, m_weights, m_spec);
}

// The logit lens: the last layer's top tokens and probabilities are the run's own next-token
// candidates, and every layer's are a plain-loop ln_f + wte of the reference's hidden state after
// that layer (the reference run with only the first l + 1 layers). A padded batch: padding is -1.
TEST_F(Gpt2Fixture, LogitLensIsTheFinalNormAndHeadOfEachLayersHiddenState) {
  const auto model = open(folder());
  RunRequest request = textRequest({"the cat sat on the mat", "hi"});
  request.logitLens = 3;
  const AttentionResult r = model->run(request);
  const int L = m_spec.layers, T = r.group().queries(), k = 3;
  ASSERT_EQ(r.logitLensIds.shape, (std::vector<int64_t>{L, 2, T, k}));
  ASSERT_EQ(r.logitLensProbs.shape, r.logitLensIds.shape);
  ASSERT_EQ(r.logitLensNext.shape, (std::vector<int64_t>{L, 2, T}));
  ASSERT_EQ(r.logitLensEntropy.shape, r.logitLensNext.shape);
  const auto cell = [&](int l, int b, int t, int i) {
    return ((static_cast<std::size_t>(l) * 2 + b) * T + t) * k + i;
  };
  for (int b = 0; b < 2; ++b) {
    const std::vector<Token>& tokens = r.group().tokens[static_cast<std::size_t>(b)];
    const int real = static_cast<int>(tokens.size());
    // The last layer at the last real token: nextTokens of that item, id for id.
    const std::vector<Prediction>& next = r.nextTokens[static_cast<std::size_t>(b)];
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(r.logitLensIds.data[cell(L - 1, b, real - 1, i)], next[i].token.id);
      EXPECT_NEAR(r.logitLensProbs.data[cell(L - 1, b, real - 1, i)], next[i].probability, 1e-6);
    }
    const FloatTensor* wte = nullptr;
    for (const NamedTensor& w : m_weights)
      if (w.name == "wte.weight") wte = &w.tensor;
    ASSERT_NE(wte, nullptr);
    const std::size_t V = static_cast<std::size_t>(wte->shape[0]), C = wte->shape[1];
    double worst = 0;
    for (int l = 0; l < L; ++l) {
      const test::ReferenceGpt2 ref =
          test::referenceGpt2(m_weights, l + 1, m_spec.heads, idsOf(tokens));
      for (int t = 0; t < real; ++t) {
        std::vector<double> p(V, 0.0);
        for (std::size_t v = 0; v < V; ++v)
          for (std::size_t c = 0; c < C; ++c)
            p[v] += ref.hidden[static_cast<std::size_t>(t) * C + c] * wte->data[v * C + c];
        const double top = *std::max_element(p.begin(), p.end());
        double sum = 0;
        for (double& v : p) sum += (v = std::exp(v - top));
        for (double& v : p) v /= sum;
        std::vector<double> sorted = p;
        std::sort(sorted.rbegin(), sorted.rend());
        for (int i = 0; i < k; ++i) {
          const float id = r.logitLensIds.data[cell(l, b, t, i)];
          ASSERT_GE(id, 0);
          worst = std::max(worst, std::abs(r.logitLensProbs.data[cell(l, b, t, i)] -
                                           p[static_cast<std::size_t>(id)]));
          worst = std::max(worst, std::abs(r.logitLensProbs.data[cell(l, b, t, i)] -
                                           sorted[static_cast<std::size_t>(i)]));
        }
        // The entropy of the whole distribution, not of the kept k.
        double entropy = 0;
        for (const double v : p) entropy -= v > 0 ? v * std::log(v) : 0.0;
        worst = std::max(
            worst, std::abs(r.logitLensEntropy.data[(static_cast<std::size_t>(l) * 2 + b) * T + t] -
                            entropy));
        const float right = r.logitLensNext.data[(static_cast<std::size_t>(l) * 2 + b) * T + t];
        if (t + 1 < real) {
          worst = std::max(worst, std::abs(right - p[static_cast<std::size_t>(tokens[t + 1].id)]));
        } else {
          EXPECT_EQ(right, -1.0f) << "no token follows the last one";
        }
      }
      for (int t = real; t < T; ++t) EXPECT_EQ(r.logitLensIds.data[cell(l, b, t, 0)], -1.0f);
    }
    EXPECT_LT(worst, 1e-5) << "item " << b;
  }
  for (const float id : r.logitLensIds.data) {
    if (id >= 0) {
      EXPECT_NE(r.logitLensToken(static_cast<int64_t>(id)), nullptr);
    }
  }
  request.logitLens = 0;
  EXPECT_TRUE(model->run(request).logitLensIds.empty()) << "nothing unless asked";
  // A model without a language-model head (the toy layer) is refused before any layer runs.
  RunRequest toy = textRequest({"the cat"});
  toy.logitLens = 5;
  test::expectError([&] { open("toy")->run(toy); }, ErrorKind::InvalidArgument,
                    "the logit lens needs a causal language model with a head");
}

// RunRequest::preview: layer 0's weights arrive from inside layer 0 (before its progress report:
// the window shows them before the layer's MLP runs), bit for bit the full result's layer 0.
// Padded rows are zeroed after a layer, so a padded batch's preview comes after layer 0 instead,
// with those rows zero.
TEST_F(Gpt2Fixture, PreviewComesFromInsideTheFirstLayerAndIsItsFinalWeights) {
  const auto model = open(folder());
  for (const std::vector<std::string>& texts :
       {std::vector<std::string>{"the cat sat on the mat"},
        std::vector<std::string>{"hi", "the cat sat on the mat"}}) {
    SCOPED_TRACE(std::to_string(texts.size()) + " texts");
    RunRequest request = textRequest(texts);
    std::vector<std::string> events;
    std::optional<AttentionResult> preview;
    request.progress = [&](int done, int) { events.push_back("layer " + std::to_string(done)); };
    request.preview = [&](AttentionResult p) {
      events.push_back("preview");
      preview = std::move(p);
    };
    const AttentionResult r = model->run(request);
    ASSERT_TRUE(preview.has_value());
    const bool padded = texts.size() > 1;
    const std::vector<std::string> want =
        padded ? std::vector<std::string>{"layer 1", "preview", "layer 2"}
               : std::vector<std::string>{"preview", "layer 1", "layer 2"};
    ASSERT_GE(events.size(), want.size());
    EXPECT_EQ(std::vector<std::string>(events.begin(), events.begin() + 3), want);
    EXPECT_TRUE(preview->preview);
    const AttentionGroup &p = preview->group(), &f = r.group();
    ASSERT_TRUE(p.hasLayer(0));
    EXPECT_FALSE(p.hasLayer(1));
    const std::size_t n = static_cast<std::size_t>(f.batch() * f.heads() * f.queries() * f.keys());
    EXPECT_TRUE(
        std::equal(p.headMatrix(0, 0, 0), p.headMatrix(0, 0, 0) + n, f.headMatrix(0, 0, 0)));
  }
}

TEST_F(Gpt2Fixture, TraceFollowsEveryStepWithMeasuredShapes) {
  const auto model = open(folder());
  const AttentionResult r = model->run(textRequest({"hello"}));
  const int64_t T = r.group().queries();
  ASSERT_EQ(r.traces.size(), 2u);
  for (const LayerTrace& trace : r.traces) {
    EXPECT_EQ(trace.variant, "gpt2");
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const TraceStep& s : trace.steps) {
      shapes[s.name] = s.shape;
      for (int input : s.inputs) EXPECT_LT(input, static_cast<int>(&s - trace.steps.data()));
    }
    EXPECT_EQ(shapes["x"], (std::vector<int64_t>{1, T, 16}));
    EXPECT_EQ(shapes["qkv"], (std::vector<int64_t>{1, T, 48}));
    EXPECT_EQ(shapes["q_split"], (std::vector<int64_t>{1, T, 16}));
    EXPECT_EQ(shapes["k"], (std::vector<int64_t>{1, 4, T, 4}));
    EXPECT_EQ(shapes["scores"], (std::vector<int64_t>{1, 4, T, T}));
    EXPECT_EQ(shapes["masked"], (std::vector<int64_t>{1, 4, T, T}));
    EXPECT_EQ(shapes["attention"], (std::vector<int64_t>{1, 4, T, T}));
    EXPECT_EQ(shapes["values"], (std::vector<int64_t>{1, 4, T, 4}));
    EXPECT_EQ(shapes["merged"], (std::vector<int64_t>{1, T, 16}));
    EXPECT_EQ(shapes["attn_out"], (std::vector<int64_t>{1, T, 16}));
    EXPECT_EQ(shapes["mlp_gelu"], (std::vector<int64_t>{1, T, 64}));
    EXPECT_EQ(shapes["residual_2"], (std::vector<int64_t>{1, T, 16}));
  }
}

TEST_F(Gpt2Fixture, ScoresAreLeftOutWhenNotWanted) {
  RunRequest request = textRequest({"hello"});
  request.keepScores = false;
  const AttentionResult r = open(folder())->run(request);
  EXPECT_TRUE(r.group().scores.empty());
  EXPECT_EQ(r.group().layers(), 2);
}

// RunRequest::keepLogits (run --dump's logits.npy): the head at every position of every item, a
// plain loop of the reference's final hidden state times wte; zero at padding; kept only when
// they fit what the memory limit leaves after the run, to the byte.
TEST_F(Gpt2Fixture, LogitsAreTheHeadAtEveryPositionWithinTheMemoryLimit) {
  const auto model = open(folder());
  RunRequest request = textRequest({"hello the world", "he"});
  request.keepLogits = true;
  const AttentionResult r = model->run(request);
  const FloatTensor* wte = nullptr;
  for (const NamedTensor& t : m_weights)
    if (t.name == "wte.weight") wte = &t.tensor;
  ASSERT_NE(wte, nullptr);
  const int64_t V = wte->dim(0), C = wte->dim(1), T = r.group().queries();
  ASSERT_EQ(r.logits.shape, (std::vector<int64_t>{2, T, V}));
  for (int b = 0; b < 2; ++b) {
    const std::vector<int64_t> ids = idsOf(r.group().tokens[static_cast<std::size_t>(b)]);
    const test::ReferenceGpt2 ref =
        test::referenceGpt2(m_weights, m_spec.layers, m_spec.heads, ids);
    const int64_t n = static_cast<int64_t>(ids.size());
    double worst = 0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t v = 0; v < V; ++v) {
        double want = 0;
        for (int64_t c = 0; t < n && c < C; ++c)
          want += ref.hidden[static_cast<std::size_t>(t * C + c)] *
                  wte->data[static_cast<std::size_t>(v * C + c)];
        const float got = r.logits.data[static_cast<std::size_t>((b * T + t) * V + v)];
        if (t >= n) {
          EXPECT_EQ(got, 0.0f) << "padding, item " << b << " position " << t;
        } else {
          worst = std::max(worst, test::closeError(got, want));
        }
      }
    EXPECT_LT(worst, 1e-4) << "item " << b;
  }

  const uint64_t bytes = static_cast<uint64_t>(2 * T * V) * sizeof(float);
  request.limits.memoryLimitBytes = model->estimate(request).total + bytes;
  EXPECT_EQ(model->run(request).logits.numel(), 2 * T * V) << "they fit, exactly";
  request.limits.memoryLimitBytes -= 1;
  const AttentionResult over = model->run(request);
  EXPECT_TRUE(over.logits.empty());
  ASSERT_FALSE(over.notices.empty());
  EXPECT_NE(over.notices.back().find("were not kept"), std::string::npos) << over.notices.back();
  EXPECT_FALSE(over.group().attention.empty()) << "the run itself went ahead";
  request.keepLogits = false;
  EXPECT_TRUE(model->run(request).logits.empty());
}

TEST_F(Gpt2Fixture, LongTextKeepsAVisibleWindowOfNPositions) {
  const AttentionResult r = open(folder())->run(textRequest({std::string(40, 'x')}));
  EXPECT_EQ(r.group().queries(), 32);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].find("at most 32"), std::string::npos) << r.notices[0];
  expectCausalRowsSumToOne(r);
}

TEST_F(Gpt2Fixture, MemoryGuardRefusesBeforeRunning) {
  RunRequest request = textRequest({"hello the world"});
  request.limits.memoryLimitBytes = 4096;
  test::expectError([&] { open(folder())->run(request); }, ErrorKind::ResourceLimit,
                    "memory limit");
}

// Keeping some layers changes what is held, not what is computed: the kept layers, the scores
// and the output are bit for bit those of the full run.
TEST(Gpt2KeptLayers, HoldExactlyThoseLayersOfTheFullRun) {
  TempDir dir;
  TinyGpt2 spec;
  spec.layers = 4;
  test::writeTinyGpt2(dir.path("model"), spec);
  const std::shared_ptr<Model> model = open(dir.path("model"));
  const RunRequest full = textRequest({"hello the world", "hi"});
  RunRequest some = full;
  some.layers = {1, 3};
  const AttentionResult a = model->run(full), b = model->run(some);
  const AttentionGroup &ga = a.group(), &gb = b.group();
  EXPECT_EQ(gb.layers(), 4);
  EXPECT_EQ(gb.attention.dim(0), 2);
  EXPECT_EQ(gb.keptLayers, (std::vector<int>{1, 3}));
  EXPECT_FALSE(gb.hasLayer(0));
  EXPECT_FALSE(gb.hasLayer(2));
  EXPECT_EQ(gb.headMatrix(2, 0, 0), nullptr);
  EXPECT_EQ(gb.scoreMatrix(0, 0, 0), nullptr);
  const std::size_t cells = static_cast<std::size_t>(ga.queries()) * ga.keys();
  for (int l : {1, 3})
    for (int item = 0; item < 2; ++item)
      for (int h = 0; h < spec.heads; ++h) {
        ASSERT_TRUE(gb.hasLayer(l));
        EXPECT_TRUE(std::equal(ga.headMatrix(l, item, h), ga.headMatrix(l, item, h) + cells,
                               gb.headMatrix(l, item, h)))
            << "layer " << l << " item " << item << " head " << h;
        EXPECT_TRUE(std::equal(ga.scoreMatrix(l, item, h), ga.scoreMatrix(l, item, h) + cells,
                               gb.scoreMatrix(l, item, h)));
      }
  EXPECT_EQ(a.output.data, b.output.data) << "every layer is still computed";
  EXPECT_EQ(b.traces.size(), 4u);
}

TEST(Gpt2KeptLayers, OutOfRangeOrUnsortedListsAreRefused) {
  TempDir dir;
  test::writeTinyGpt2(dir.path("model"), TinyGpt2{});
  const std::shared_ptr<Model> model = open(dir.path("model"));
  RunRequest request = textRequest({"hello"});
  request.layers = {0, 2};
  test::expectError([&] { model->run(request); }, ErrorKind::InvalidArgument, "layers 0..1");
  request.layers = {1, 0};
  test::expectError([&] { model->estimate(request); }, ErrorKind::InvalidArgument, "ascending");
}

// The estimate a front end shows is the one the run checks: a limit of exactly its total runs,
// one byte less is refused; keeping one layer of four holds a quarter of the attention.
TEST(Gpt2KeptLayers, EstimateIsWhatTheRunChecks) {
  TempDir dir;
  TinyGpt2 spec;
  spec.layers = 4;
  test::writeTinyGpt2(dir.path("model"), spec);
  const std::shared_ptr<Model> model = open(dir.path("model"));
  RunRequest request = textRequest({"hello the world"});
  const MemoryEstimate all = model->estimate(request);
  const int T = static_cast<int>(model->tokenize("hello the world").size());
  EXPECT_EQ(all.queries, T);
  EXPECT_EQ(all.attention, uint64_t(4) * spec.heads * T * T * 4);
  EXPECT_EQ(all.scores, all.attention);
  EXPECT_EQ(all.perLayer, 2 * all.attention / 4);
  EXPECT_EQ(all.layersKept, 4);
  EXPECT_EQ(all.total, all.weights - all.mappedWeights + all.attention + all.scores + all.working);
  EXPECT_GT(all.weights, 0u);
  request.limits.memoryLimitBytes = all.total;
  EXPECT_NO_THROW(model->run(request));
  request.limits.memoryLimitBytes = all.total - 1;
  test::expectError([&] { model->run(request); }, ErrorKind::ResourceLimit, "memory limit");
  request.layers = {2};
  const MemoryEstimate one = model->estimate(request);
  EXPECT_EQ(one.attention, all.attention / 4);
  EXPECT_EQ(one.layersKept, 1);
  EXPECT_NO_THROW(model->run(request)) << "one layer fits where four did not";
}

// Before a byte of the weights is read: the limit is checked against the files' sizes.
TEST_F(Gpt2Fixture, OpeningRefusesWeightsOverTheMemoryLimit) {
  const uint64_t weights = fs::file_size(fs::path(folder()) / "model.safetensors");
  ModelSpec spec;
  spec.source = folder();
  spec.memoryLimitBytes = weights - 1;
  test::expectError([&] { openModel(spec); }, ErrorKind::ResourceLimit, "loading its weights");
  spec.memoryLimitBytes = weights + (1 << 20);
  EXPECT_NO_THROW(openModel(spec));
}

TEST_F(Gpt2Fixture, CancelledRunsStop) {
  const std::atomic<bool> cancel{true};
  RunRequest request = textRequest({"hello"});
  request.cancel = &cancel;
  test::expectError([&] { open(folder())->run(request); }, ErrorKind::Cancelled, "cancelled");
}

TEST_F(Gpt2Fixture, RefusesRandomInputAndContext) {
  RunRequest random;
  random.random = RandomInput{1, 4};
  test::expectError([&] { open(folder())->run(random); }, ErrorKind::InvalidArgument, "text");
  RunRequest context = textRequest({"hi"});
  context.context = "there";
  test::expectError([&] { open(folder())->run(context); }, ErrorKind::InvalidArgument,
                    "cross-attention");
}

TEST_F(Gpt2Fixture, ParametersCarryTheHuggingFaceNames) {
  const auto params = open(folder())->parameters();
  ASSERT_EQ(params.size(), m_weights.size());
  std::map<std::string, const FloatTensor*> byName;
  for (const NamedTensor& p : params) byName[p.name] = &p.tensor;
  for (const NamedTensor& w : m_weights) {
    ASSERT_TRUE(byName.count(w.name)) << w.name;
    EXPECT_EQ(byName[w.name]->data, w.tensor.data) << w.name;
  }
}

// Corrupted folders -------------------------------------------------------------------------

class Gpt2Corrupted : public Gpt2Fixture {
 protected:
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(fs::path(folder()) / name, std::ios::binary) << bytes;
  }
  void writeConfig(const nlohmann::json& changes) {
    nlohmann::json c = nlohmann::json::parse(test::tinyConfigJson(m_spec));
    c.update(changes);
    write("config.json", c.dump());
  }
  void expectOpenError(ErrorKind kind, const std::string& word) {
    test::expectError([&] { open(folder()); }, kind, word);
  }
};

TEST_F(Gpt2Corrupted, MissingFilesAreNamed) {
  for (const char* name : {"config.json", "vocab.json", "merges.txt", "model.safetensors"}) {
    const fs::path p = fs::path(folder()) / name, aside = p.string() + ".aside";
    fs::rename(p, aside);
    expectOpenError(ErrorKind::Io, name);
    fs::rename(aside, p);
  }
  EXPECT_NO_THROW(open(folder()));
}

TEST_F(Gpt2Corrupted, MissingShardIsNamed) {
  TempDir other;
  TinyGpt2 spec = m_spec;
  spec.storage = TinyStorage::Sharded;
  test::writeTinyGpt2(other.path("m"), spec);
  fs::remove(fs::path(other.path("m")) / "model-00002-of-00002.safetensors");
  test::expectError([&] { open(other.path("m")); }, ErrorKind::Io,
                    "model-00002-of-00002.safetensors");
}

TEST_F(Gpt2Corrupted, ShapeMismatchNamesTheTensor) {
  std::vector<NamedTensor> w = m_weights;
  for (NamedTensor& t : w) {
    if (t.name == "h.1.mlp.c_fc.weight") t.tensor = FloatTensor({16, 32});
  }
  writeSafetensors((fs::path(folder()) / "model.safetensors").string(), w);
  expectOpenError(ErrorKind::Format, "h.1.mlp.c_fc.weight");
}

TEST_F(Gpt2Corrupted, IntegerWeightsAreAFormatError) {
  std::vector<test::RawTensor> raw;
  for (const NamedTensor& t : m_weights) {
    test::RawTensor r{
        t.name, "F32", t.tensor.shape,
        std::string(reinterpret_cast<const char*>(t.tensor.data.data()), t.tensor.data.size() * 4)};
    if (t.name == "wpe.weight") {
      r.dtype = "I64";
      r.bytes += r.bytes;  // 8 bytes per element
    }
    raw.push_back(std::move(r));
  }
  write("model.safetensors", test::rawSafetensors(raw));
  expectOpenError(ErrorKind::Format, "I64");
  expectOpenError(ErrorKind::Format, "wpe.weight");
}

TEST_F(Gpt2Corrupted, ConfigThatCannotBeRightIsRefused) {
  writeConfig({{"n_head", 5}});
  expectOpenError(ErrorKind::Format, "n_head (5) must divide n_embd (16)");
  writeConfig({{"n_embd", 32}, {"n_head", 4}});
  expectOpenError(ErrorKind::Format, "wte.weight");
  writeConfig({{"n_layer", 3}});
  expectOpenError(ErrorKind::Format, "missing tensor 'transformer.h.2.");
  writeConfig({{"n_layer", 1}});
  expectOpenError(ErrorKind::Format, "unexpected tensor 'transformer.h.1.");
  writeConfig({{"model_type", "xlnet"}});
  expectOpenError(ErrorKind::Format, "model_type 'xlnet' is not supported");
  writeConfig({{"n_embd", "sixteen"}});
  expectOpenError(ErrorKind::Format, "n_embd");
  write("config.json", "{not json");
  expectOpenError(ErrorKind::Format, "config.json");
}

TEST_F(Gpt2Corrupted, VocabularyLargerThanTheEmbeddingIsRefused) {
  writeConfig({{"vocab_size", 258}});
  expectOpenError(ErrorKind::Format, "vocab_size");
}

// The Hugging Face cache ---------------------------------------------------------------------

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_old) {
      ::setenv(m_name, m_old->c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
  }

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

TEST(ModelCatalog, FindsSnapshotsInTheHubCache) {
  TempDir cache;
  const fs::path repo = fs::path(cache.path("models--tiny-org--tiny-gpt2"));
  test::writeTinyGpt2((repo / "snapshots" / "aaaa").string(), TinyGpt2{});
  test::writeTinyGpt2((repo / "snapshots" / "bbbb").string(), TinyGpt2{});
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << "aaaa\n";
  // An incomplete download (no config.json) is not listed.
  fs::create_directories(fs::path(cache.path("models--other--partial")) / "snapshots" / "cccc");
  ScopedEnv hub("HF_HUB_CACHE", cache.path(""));
  ScopedEnv home("HF_HOME", cache.path("nowhere"));

  const std::vector<CachedModel> models = findCachedModels();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "tiny-org/tiny-gpt2");
  EXPECT_EQ(models[0].modelType, "gpt2");
  EXPECT_EQ(fs::path(models[0].path).filename(), "aaaa") << "refs/main picks the snapshot";
  EXPECT_EQ(resolveCachedModel("tiny-gpt2"), models[0].path);
  EXPECT_EQ(resolveCachedModel("tiny-org/tiny-gpt2"), models[0].path);
  EXPECT_FALSE(resolveCachedModel("other-org/tiny-gpt2"));

  const auto model = open("tiny-gpt2");
  EXPECT_EQ(model->info().name, "tiny-gpt2");
  EXPECT_EQ(model->run(textRequest({"hi"})).group().layers(), 2);

  // Without refs/main the newest snapshot with a config.json wins.
  fs::remove(repo / "refs" / "main");
  fs::last_write_time(repo / "snapshots" / "aaaa",
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  EXPECT_EQ(fs::path(*resolveCachedModel("tiny-gpt2")).filename(), "bbbb");
}

TEST(ModelCatalog, UnknownNamesSayWhereTheyWereLookedFor) {
  TempDir cache;
  ScopedEnv hub("HF_HUB_CACHE", cache.path("hub"));
  test::expectError([&] { open("no-such-model"); }, ErrorKind::InvalidArgument,
                    "not in the Hugging Face cache");
  test::expectError([&] { open("no-such-model"); }, ErrorKind::InvalidArgument, cache.path("hub"));
}

// A BF16 model keeps float32 copies of its weights across runs when a run asks it to: the numbers
// are bit-identical with and without them, the copies stay within the budget, a run that asks for
// none gives them back, and closing the model frees them.
TEST(Gpt2WeightCache, CopiesAreExactBoundedAndFreedWithTheModel) {
  TempDir dir;
  TinyGpt2 spec;
  spec.storage = TinyStorage::BF16;
  test::writeTinyGpt2(dir.path("model"), spec);
  const uint64_t before = weightCacheBytesInProcess();
  {
    const auto model = open(dir.path("model"));
    ModelInfo info = model->info();
    EXPECT_EQ(info.weightDtype, "BF16");
    EXPECT_EQ(info.widenedBytes, 2 * info.parameterBytes) << "every parameter is BF16";
    EXPECT_EQ(info.weightCacheBytes, 0u);

    RunRequest request = textRequest({"hello the world", "the"});
    const AttentionResult plain = model->run(request);
    EXPECT_EQ(model->info().weightCacheBytes, 0u) << "the default keeps no copies";

    request.limits.weightCacheBytes = int64_t{1} << 30;
    const AttentionResult first = model->run(request);
    info = model->info();
    EXPECT_GT(info.weightCacheBytes, info.widenedBytes / 2) << "the layers' weights are kept";
    EXPECT_LE(info.weightCacheBytes, info.widenedBytes * 2);
    EXPECT_EQ(weightCacheBytesInProcess(), before + info.weightCacheBytes);
    const AttentionResult second = model->run(request);  // from the copies
    EXPECT_EQ(model->info().weightCacheBytes, info.weightCacheBytes) << "nothing kept twice";
    for (const AttentionResult* r : {&first, &second}) {
      EXPECT_EQ(r->group().attention.data, plain.group().attention.data);
      EXPECT_EQ(r->group().scores.data, plain.group().scores.data);
      EXPECT_EQ(r->output.data, plain.output.data);
    }

    request.limits.weightCacheBytes = 3000;  // about one of the 16 x 48 attention weights
    model->run(request);
    EXPECT_LE(model->info().weightCacheBytes, 3000u) << "a smaller budget: the copies go first";

    request.limits.weightCacheBytes = RunLimits::kAutoWeightCache;
    const AttentionResult automatic = model->run(request);
    EXPECT_EQ(automatic.group().attention.data, plain.group().attention.data);
    EXPECT_GT(model->info().weightCacheBytes, 3000u) << "this machine has memory to spare";

    request.limits.weightCacheBytes = 0;
    model->run(request);
    EXPECT_EQ(model->info().weightCacheBytes, 0u) << "a run that keeps none gives them back";
    request.limits.weightCacheBytes = int64_t{1} << 30;
    model->run(request);
    EXPECT_GT(weightCacheBytesInProcess(), before);
  }
  EXPECT_EQ(weightCacheBytesInProcess(), before) << "closing the model frees its copies";
}

TEST(Gpt2WeightCache, Float32ModelsHaveNothingToKeep) {
  TempDir dir;
  test::writeTinyGpt2(dir.path("model"), TinyGpt2{});
  const auto model = open(dir.path("model"));
  RunRequest request = textRequest({"hello"});
  request.limits.weightCacheBytes = int64_t{1} << 30;
  model->run(request);
  EXPECT_EQ(model->info().weightDtype, "F32");
  EXPECT_EQ(model->info().widenedBytes, 0u);
  EXPECT_EQ(model->info().weightCacheBytes, 0u);
}

}  // namespace
}  // namespace attnscope
