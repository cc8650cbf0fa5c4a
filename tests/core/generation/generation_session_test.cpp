// SPDX-License-Identifier: GPL-3.0-or-later
// Step-by-step generation through the key/value cache (Model::startGeneration) on the tiny GPT,
// the per-head family: each step's attention row against one full run over the final text, the
// greedy tokens against each prefix's own prediction, seeds across thread counts, refusals, and
// issue 30's memory checks: a 1024-token generation's kept rows, and the logit lens's estimate.
// The Hugging Face families are checked against Python in tests/reference (decoder_reference.py,
// gemma2_reference.py, gpt2_reference.py).
#include <gtest/gtest.h>

#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/toy_config.h"
#include "expect_close.h"

namespace attnscope {
namespace {

TinyGpt tinyModel() {
  return TinyGpt::create({2, 4, 16, 12, 0}, TinyGpt::vocabularyOf("abcdefgh "), 3);
}

std::string textOf(const Generation& g) {
  std::string s;
  for (const Token& t : g.tokens()) s += t.text;
  return s;
}

ErrorKind kindOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorKind::Internal;
}

TEST(GenerationSession, StepRowsEqualOneFullRunAndGreedyTokensEachPrefixsPrediction) {
  const auto model = tinyModel().asModel();
  GenerationRequest request;
  request.text = "abca";
  const auto g = model->startGeneration(request);
  std::vector<GenerationStep> steps;
  for (int i = 0; i < 6; ++i) steps.push_back(g->step({}));
  ASSERT_EQ(g->tokens().size(), 10u);
  RunRequest run;
  run.texts = {textOf(*g)};
  const AttentionResult full = model->run(run);
  const AttentionGroup& a = full.group();  // [L, 1, H, T, T]
  double worst = 0;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const FloatTensor& row = steps[s].attention;  // [L, H, T_s]
    const auto Ts = static_cast<int64_t>(request.text.size() + s);
    ASSERT_EQ(row.shape, (std::vector<int64_t>{2, 4, Ts}));
    const int64_t T = a.attention.dim(4);
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t k = 0; k < Ts; ++k) {
          const float got = row.data[static_cast<std::size_t>((l * 4 + h) * Ts + k)];
          const float want =
              a.attention.data[static_cast<std::size_t>(((l * 4 + h) * T + Ts - 1) * T + k)];
          worst = std::max(worst, test::closeError(got, want));
        }
    // Greedy: the most likely next token of a run over the text so far.
    RunRequest prefix;
    prefix.texts = {run.texts[0].substr(0, static_cast<std::size_t>(Ts))};
    EXPECT_EQ(steps[s].token.id, model->run(prefix).nextToken.front().token.id) << "step " << s;
    EXPECT_NEAR(steps[s].candidates.front().pModel,
                model->run(prefix).nextToken.front().probability, 1e-5);
  }
  EXPECT_LE(worst, 1e-5);
}

TEST(GenerationSession, ForcedTokensAndThePositionLimit) {
  const auto model = tinyModel().asModel();
  GenerationRequest request;
  request.text = "abc";
  const auto g = model->startGeneration(request);
  StepOptions forced;
  forced.forcedId = 8;  // ' ' is id 0, 'a'..'h' 1..8
  const GenerationStep s = g->step(forced);
  EXPECT_TRUE(s.forced);
  EXPECT_EQ(s.token.text, "h");
  forced.forcedId = 9;
  EXPECT_EQ(kindOf([&] { g->step(forced); }), ErrorKind::InvalidArgument);
  while (g->canStep()) g->step({});
  EXPECT_EQ(g->tokens().size(), 12u);  // block_size
  EXPECT_EQ(kindOf([&] { g->step({}); }), ErrorKind::ResourceLimit);
}

TEST(GenerationSession, TheSameSeedWritesTheSameTextOnOneAndTwoThreads) {
  const auto model = tinyModel().asModel();
  const auto generate = [&](int threads, uint64_t seed) {
    setThreadCount(threads);
    GenerationRequest request;
    request.text = "ab";
    request.keepAttention = false;
    const auto g = model->startGeneration(request);
    StepOptions o;
    o.sampling.temperature = 3.0;  // flat: the seed decides
    o.sampling.seed = seed;
    while (g->canStep()) g->step(o);
    return textOf(*g);
  };
  const std::string one = generate(1, 5);
  EXPECT_EQ(generate(2, 5), one);
  EXPECT_NE(generate(2, 6), one);
  setThreadCount(0);
}

TEST(GenerationSession, RefusesWhatCannotGenerate) {
  ToyConfig toy;  // an encoder layer
  EXPECT_EQ(kindOf([&] { makeToyModel(toy)->startGeneration({}); }), ErrorKind::InvalidArgument);
  GenerationRequest empty;
  EXPECT_EQ(kindOf([&] { tinyModel().asModel()->startGeneration(empty); }),
            ErrorKind::InvalidArgument);
  GenerationRequest big;
  big.text = "abc";
  big.limits.memoryLimitBytes = 1000;
  EXPECT_EQ(kindOf([&] { tinyModel().asModel()->startGeneration(big); }), ErrorKind::ResourceLimit);
}

// Issue 30: a 1024-token generation (a 960-token prompt and 64 steps, to stay quick) that keeps
// every step's attention row stays within the memory limit, and one whose rows would not fit is
// refused before its first step, saying why. The rows are counted here on their own: the sum
// over steps of L·H·T_step floats.
TEST(GenerationSession, AThousandTokensOfKeptRowsFitTheLimitOrAreRefusedWithAMessage) {
  const int L = 2, H = 4, C = 16, N = 64;
  const auto model =
      TinyGpt::create({L, H, C, 1024, 0}, TinyGpt::vocabularyOf("abcdefgh "), 3).asModel();
  std::string prompt;
  for (int i = 0; i < 1024 - N; ++i) prompt += "abcdefgh "[i % 9];
  const auto T0 = static_cast<uint64_t>(prompt.size());
  uint64_t rowBytes = 0;  // step s reads T0 + s keys
  for (uint64_t s = 0; s < static_cast<uint64_t>(N); ++s) rowBytes += L * H * (T0 + s) * 4;
  const uint64_t cacheBytes = 2ull * L * H * (T0 + N) * (C / H) * 4;  // keys and values
  const uint64_t need = rowBytes + cacheBytes + model->info().parameterBytes;
  GenerationRequest request;
  request.text = prompt;
  request.maxNewTokens = N;
  request.candidates = 1;

  request.limits.memoryLimitBytes = need + need / 100;
  const auto g = model->startGeneration(request);
  uint64_t kept = 0;
  for (int i = 0; i < N; ++i) kept += g->step({}).attention.data.size() * sizeof(float);
  EXPECT_EQ(kept, rowBytes);
  EXPECT_EQ(g->tokens().size(), T0 + N);

  // Short of the rows by a tenth: refused before anything is allocated, naming what needs it.
  request.limits.memoryLimitBytes = need - rowBytes / 10;
  try {
    model->startGeneration(request);
    ADD_FAILURE() << "a generation over the memory limit started";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ResourceLimit);
    const std::string m = e.what();
    EXPECT_NE(m.find("generating 64 tokens after 960"), std::string::npos) << m;
    EXPECT_NE(m.find("every step's attention row"), std::string::npos) << m;
    EXPECT_NE(m.find("memory limit"), std::string::npos) << m;
  }
  // Without the rows, the same limit holds the cache.
  request.keepAttention = false;
  EXPECT_NO_THROW(model->startGeneration(request));
}

// Issue 30: the logit lens counts in a run's estimate (its kept [L, B, T, k] and a block of the
// vocabulary's softmax), so a lens over the memory limit is refused before the run allocates
// anything, with a message that names it; the same limit holds a small lens.
TEST(GenerationSession, AnOverLimitLogitLensIsRefusedBeforeTheRun) {
  const auto model = tinyModel().asModel();
  RunRequest request;
  request.texts = {"abcabcab"};
  const MemoryEstimate without = model->estimate(request);
  const int64_t L = 2, T = 8, k = int64_t{1} << 20;
  request.logitLens = static_cast<int>(k);
  const MemoryEstimate with = model->estimate(request);
  EXPECT_GE(with.total - without.total, static_cast<uint64_t>(L * T * k * 8));
  request.limits.memoryLimitBytes = without.total + (1u << 20);
  try {
    model->run(request);
    ADD_FAILURE() << "a logit lens over the memory limit ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ResourceLimit);
    EXPECT_NE(std::string(e.what()).find("logit lens's top 1048576 of 9 tokens at 2 layers x 8"),
              std::string::npos)
        << e.what();
  }
  request.logitLens = 3;
  const AttentionResult r = model->run(request);
  EXPECT_EQ(r.logitLensIds.shape, (std::vector<int64_t>{L, 1, T, 3}));
  EXPECT_EQ(r.logitLensEntropy.shape, (std::vector<int64_t>{L, 1, T}));
}

}  // namespace
}  // namespace attnscope
