// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/runtime.h"
#include "attnscope/toy_config.h"
#include "expect_close.h"
#include "reference_attention.h"

namespace attnscope {
namespace {

using test::closeTolerance;

RunRequest textRequest(std::vector<std::string> texts) {
  RunRequest r;
  r.texts = std::move(texts);
  r.device = DeviceKind::Cpu;
  return r;
}

float at(const AttentionResult& r, int l, int b, int h, int q, int k) {
  return r.group().headMatrix(l, b, h)[static_cast<std::size_t>(q) * r.group().keys() + k];
}

TEST(ToyModel, RowsSumToOneCausalUpperTriangleAndPaddedKeysAreZero) {
  for (Variant variant : {Variant::Fused, Variant::PerHead}) {
    ToyConfig c;
    c.variant = variant;
    c.mask = MaskKind::Causal;
    const auto model = makeToyModel(c);
    const AttentionResult r = model->run(textRequest({"hello there", "hi", "attention!"}));
    ASSERT_EQ(r.group().batch(), 3);
    ASSERT_EQ(r.group().queries(), 11);
    EXPECT_EQ(r.group().queryLengths, (std::vector<int>{11, 2, 10}));
    for (int b = 0; b < 3; ++b) {
      for (int h = 0; h < r.group().heads(); ++h) {
        for (int q = 0; q < r.group().queries(); ++q) {
          double sum = 0;
          for (int k = 0; k < r.group().keys(); ++k) {
            const float a = at(r, 0, b, h, q, k);
            if (k > q) {
              EXPECT_EQ(a, 0.0f) << "causal upper triangle";
            }
            if (k >= r.group().keyLengths[b]) {
              EXPECT_EQ(a, 0.0f) << "padded key";
            }
            sum += a;
          }
          if (q < r.group().queryLengths[b]) {
            EXPECT_NEAR(sum, 1.0, 1e-5);
          } else {
            EXPECT_EQ(sum, 0.0) << "padded query rows are zero";
          }
        }
      }
    }
  }
}

// A causal mask belongs to self-attention: with a context, the keys are another sequence, so the
// first query must see every context token, including those past its own position.
TEST(ToyModel, CausalMaskIsNotAppliedToCrossAttention) {
  for (Variant variant : {Variant::Fused, Variant::PerHead}) {
    ToyConfig c;
    c.variant = variant;
    c.mask = MaskKind::Causal;
    c.tokenizer = TokenizerKind::Word;
    RunRequest req = textRequest({"one two", "three"});
    req.context = "a much longer context of keys";
    const AttentionResult r = makeToyModel(c)->run(req);
    ASSERT_EQ(r.group().name, "cross");
    ASSERT_EQ(r.group().keys(), 6);
    for (int b = 0; b < 2; ++b) {
      for (int h = 0; h < r.group().heads(); ++h) {
        for (int q = 0; q < r.group().queryLengths[b]; ++q) {
          double sum = 0;
          for (int k = 0; k < r.group().keys(); ++k) {
            EXPECT_GT(at(r, 0, b, h, q, k), 0.0f) << toString(variant) << " item " << b << " head "
                                                  << h << " query " << q << " key " << k;
            sum += at(r, 0, b, h, q, k);
          }
          EXPECT_NEAR(sum, 1.0, 1e-5);
        }
      }
    }
  }
}

// Random configurations of both variants, both masks, cross-attention and B > 1, each checked
// against the plain-loop reference computed from the model's own exported weights and input.
TEST(ToyModel, MatchesPlainLoopReference) {
  std::mt19937 rng(1234);
  const std::vector<std::string> words = {
      "the cat sat",        "on a mat", "attention is all",
      "héllo wörld 🙂", "a",        "transformers attend to tokens"};
  for (int trial = 0; trial < 24; ++trial) {
    ToyConfig c;
    c.variant = trial % 2 ? Variant::PerHead : Variant::Fused;
    c.mask = (trial / 2) % 2 ? MaskKind::Causal : MaskKind::None;
    c.scale = (trial / 4) % 3 == 2 ? ScaleKind::Embedding : ScaleKind::HeadSize;
    c.heads = 1 + static_cast<int>(rng() % 4);
    c.dModel = c.heads * (2 + static_cast<int>(rng() % 6));
    c.inputDim = 3 + static_cast<int>(rng() % 20);
    c.seed = rng();
    const bool cross = trial % 3 == 0;
    RunRequest req;
    req.device = DeviceKind::Cpu;
    const int B = 1 + static_cast<int>(rng() % 3);
    for (int b = 0; b < B; ++b) req.texts.push_back(words[rng() % words.size()]);
    if (cross) req.context = words[rng() % words.size()];
    const auto model = makeToyModel(c);
    const AttentionResult r = model->run(req);
    const test::ReferenceResult ref = test::referenceAttention(
        c, model->parameters(), r.input, cross ? &r.contextInput : nullptr, r.group().keyLengths);
    ASSERT_EQ(r.group().attention.data.size(), ref.attention.size());
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < c.heads; ++h) {
        for (int q = 0; q < r.group().queryLengths[b]; ++q) {
          for (int k = 0; k < r.group().keys(); ++k) {
            const std::size_t i =
                ((static_cast<std::size_t>(b) * c.heads + h) * r.group().queries() + q) *
                    r.group().keys() +
                k;
            ASSERT_NEAR(r.group().attention.data[i], ref.attention[i], 1e-5) << "trial " << trial;
          }
        }
        for (int q = 0; q < r.group().queryLengths[b]; ++q) {
          for (int d = 0; d < c.dModel; ++d) {
            const std::size_t i =
                (static_cast<std::size_t>(b) * r.group().queries() + q) * c.dModel + d;
            ASSERT_NEAR(r.output.data[i], ref.output[i], closeTolerance(ref.output[i], 1e-5))
                << "trial " << trial;
          }
        }
      }
    }
  }
}

// Without scores the run writes attention straight into the result; it must be the same
// attention (padded rows included) as with scores, and the scores must then be absent.
TEST(ToyModel, SkippingScoresGivesTheSameAttention) {
  for (Variant variant : {Variant::Fused, Variant::PerHead}) {
    ToyConfig c;
    c.variant = variant;
    c.mask = MaskKind::Causal;
    const auto model = makeToyModel(c);
    RunRequest withScores = textRequest({"hello there", "hi", "attention!"});
    withScores.context = std::nullopt;
    RunRequest without = withScores;
    without.keepScores = false;
    const AttentionResult a = model->run(withScores), b = model->run(without);
    EXPECT_FALSE(a.group().scores.empty());
    EXPECT_TRUE(b.group().scores.empty());
    EXPECT_EQ(a.group().attention.shape, b.group().attention.shape);
    EXPECT_EQ(a.group().attention.data, b.group().attention.data) << toString(variant);
    EXPECT_EQ(a.output.data, b.output.data) << toString(variant);
  }
}

// The textbook's separate heads and the tutorial's fused layer are the same function when the
// fused weights interleave the heads' q, k, v rows and the fused bias is zero.
TEST(ToyModel, VariantsAgreeWithEquivalentWeights) {
  ToyConfig ph;
  ph.variant = Variant::PerHead;
  ph.inputDim = 24;
  ph.dModel = 32;
  ph.heads = 4;
  ph.mask = MaskKind::Causal;
  ph.seed = 7;
  const auto perHead = makeToyModel(ph);
  std::vector<NamedTensor> w = perHead->parameters();
  auto get = [&](const std::string& n) -> const FloatTensor& {
    for (const auto& t : w)
      if (t.name == n) return t.tensor;
    throw std::runtime_error(n);
  };
  const int hd = 8;
  FloatTensor qkvW({3 * 32, 24}), qkvB({3 * 32});
  for (int h = 0; h < 4; ++h) {
    const std::string p = "heads." + std::to_string(h) + ".";
    const FloatTensor* parts[3] = {&get(p + "query.weight"), &get(p + "key.weight"),
                                   &get(p + "value.weight")};
    for (int part = 0; part < 3; ++part) {
      std::copy(parts[part]->data.begin(), parts[part]->data.end(),
                qkvW.data.begin() + (h * 3 * hd + part * hd) * 24);
    }
  }
  ToyConfig fu = ph;
  fu.variant = Variant::Fused;
  const auto fused = makeToyModel(fu, {{"qkv_layer.weight", qkvW},
                                       {"qkv_layer.bias", qkvB},
                                       {"linear_layer.weight", get("proj.weight")},
                                       {"linear_layer.bias", get("proj.bias")}});
  const RunRequest req = textRequest({"separate heads or one fused layer", "same thing"});
  const AttentionResult a = perHead->run(req), b = fused->run(req);
  ASSERT_EQ(a.group().attention.shape, b.group().attention.shape);
  for (std::size_t i = 0; i < a.group().attention.data.size(); ++i)
    ASSERT_NEAR(a.group().attention.data[i], b.group().attention.data[i], 1e-6);
  for (std::size_t i = 0; i < a.output.data.size(); ++i)
    ASSERT_NEAR(a.output.data[i], b.output.data[i], closeTolerance(b.output.data[i], 1e-5));
}

TEST(ToyModel, TutorialShapeTrace) {
  ToyConfig c;
  c.variant = Variant::Fused;
  c.inputDim = 1024;
  c.dModel = 512;
  c.heads = 8;
  RunRequest req;
  req.random = RandomInput{30, 5};
  req.device = DeviceKind::Cpu;
  const AttentionResult r = makeToyModel(c)->run(req);
  ASSERT_EQ(r.traces.size(), 1u);
  std::vector<std::pair<std::string, std::vector<int64_t>>> got;
  for (const TraceStep& s : r.traces[0].steps) got.emplace_back(s.name, s.shape);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> want = {
      {"x", {30, 5, 1024}},         {"qkv", {30, 5, 1536}},     {"qkv", {30, 5, 8, 192}},
      {"qkv", {30, 8, 5, 192}},     {"q", {30, 8, 5, 64}},      {"k", {30, 8, 5, 64}},
      {"v", {30, 8, 5, 64}},        {"scores", {30, 8, 5, 5}},  {"scaled", {30, 8, 5, 5}},
      {"attention", {30, 8, 5, 5}}, {"values", {30, 8, 5, 64}}, {"values", {30, 5, 512}},
      {"out", {30, 5, 512}}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(r.group().attention.shape, (std::vector<int64_t>{1, 30, 8, 5, 5}));
  EXPECT_EQ(r.output.shape, (std::vector<int64_t>{30, 5, 512}));
  EXPECT_EQ(r.device, "cpu");
}

TEST(ToyModel, PerHeadTraceHasOneBranchPerHead) {
  ToyConfig c;
  c.variant = Variant::PerHead;
  c.mask = MaskKind::Causal;
  const AttentionResult r = makeToyModel(c)->run(textRequest({"abc"}));
  int branches = 0;
  for (const TraceStep& s : r.traces[0].steps) branches += (s.name == "q" && s.head >= 0);
  EXPECT_EQ(branches, 4);
  EXPECT_EQ(r.traces[0].steps.back().name, "out");
  EXPECT_EQ(r.traces[0].steps.back().shape, (std::vector<int64_t>{1, 3, 64}));
}

TEST(ToyModel, EmbeddingScaleIsSqrtOfHeadsSharperThanHeadScale) {
  ToyConfig c;
  c.dModel = 64;
  c.heads = 4;
  const AttentionResult head = makeToyModel(c)->run(textRequest({"scale"}));
  c.scale = ScaleKind::Embedding;
  const AttentionResult embd = makeToyModel(c)->run(textRequest({"scale"}));
  // scores ∝ scale, and 1/√64 ÷ 1/√16 = 1/2.
  for (std::size_t i = 0; i < head.group().scores.data.size(); ++i) {
    const double want = 0.5 * head.group().scores.data[i];
    ASSERT_NEAR(embd.group().scores.data[i], want, closeTolerance(want, 1e-5));
  }
  EXPECT_NE(head.group().attention.data, embd.group().attention.data);
}

TEST(ToyModel, SeedDeterminesResult) {
  ToyConfig c;
  const auto a = makeToyModel(c)->run(textRequest({"same seed"}));
  const auto b = makeToyModel(c)->run(textRequest({"same seed"}));
  c.seed = 1;
  const auto d = makeToyModel(c)->run(textRequest({"same seed"}));
  EXPECT_EQ(a.group().attention.data, b.group().attention.data);
  EXPECT_NE(a.group().attention.data, d.group().attention.data);
}

ErrorKind errorOf(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error thrown";
  return ErrorKind::Internal;
}

TEST(ToyModel, BadInputGivesClearErrors) {
  std::string msg;
  ToyConfig c;
  c.heads = 3;
  EXPECT_EQ(errorOf([&] { makeToyModel(c); }, &msg), ErrorKind::InvalidArgument);
  EXPECT_EQ(msg, "heads (3) must divide d_model (64)");
  c.heads = 0;
  EXPECT_EQ(errorOf([&] { makeToyModel(c); }, &msg), ErrorKind::InvalidArgument);
  EXPECT_NE(msg.find("heads must be positive"), std::string::npos);

  const auto model = makeToyModel(ToyConfig{});
  EXPECT_EQ(errorOf([&] { model->run(textRequest({""})); }, &msg), ErrorKind::InvalidArgument);
  EXPECT_NE(msg.find("empty"), std::string::npos);
  EXPECT_EQ(errorOf(
                [&] {
                  model->run(textRequest({"ok", "bad \xC3\x28"}));
                },
                &msg),
            ErrorKind::InvalidArgument);
  EXPECT_NE(msg.find("invalid UTF-8 at byte 4 of text 2"), std::string::npos);

  RunRequest longText = textRequest({std::string(50, 'x')});
  longText.limits.maxTokens = 10;
  EXPECT_EQ(errorOf([&] { model->run(longText); }, &msg), ErrorKind::ResourceLimit);
  EXPECT_NE(msg.find("50 tokens"), std::string::npos);

  RunRequest big;
  big.random = RandomInput{64, 4096};
  big.device = DeviceKind::Cpu;
  big.limits.memoryLimitBytes = 1ull << 30;
  EXPECT_EQ(errorOf([&] { model->run(big); }, &msg), ErrorKind::ResourceLimit);
  EXPECT_NE(msg.find("GiB"), std::string::npos) << msg;

  if (!cudaAvailable()) {
    RunRequest cuda = textRequest({"gpu"});
    cuda.device = DeviceKind::Cuda;
    EXPECT_EQ(errorOf([&] { model->run(cuda); }, &msg), ErrorKind::Unavailable);
  }
}

TEST(ToyModel, LoadingWeightsChecksNamesAndShapes) {
  ToyConfig c;
  std::vector<NamedTensor> w = makeToyModel(c)->parameters();
  std::string msg;
  auto missing = w;
  missing.pop_back();
  EXPECT_EQ(errorOf([&] { makeToyModel(c, missing); }, &msg), ErrorKind::Format);
  EXPECT_NE(msg.find("missing tensor 'linear_layer.bias'"), std::string::npos) << msg;
  auto wrong = w;
  wrong[0].tensor = FloatTensor({2, 2});
  EXPECT_EQ(errorOf([&] { makeToyModel(c, wrong); }, &msg), ErrorKind::Format);
  EXPECT_NE(msg.find("has shape [2, 2]"), std::string::npos) << msg;
  auto extra = w;
  extra.push_back({"bogus", FloatTensor({1})});
  EXPECT_EQ(errorOf([&] { makeToyModel(c, extra); }, &msg), ErrorKind::Format);
}

}  // namespace
}  // namespace attnscope
