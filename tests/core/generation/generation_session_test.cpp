// SPDX-License-Identifier: GPL-3.0-or-later
// Step-by-step generation through the key/value cache (Model::startGeneration) on the tiny GPT,
// the per-head family: each step's attention row against one full run over the final text, the
// greedy tokens against each prefix's own prediction, seeds across thread counts, and refusals.
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

}  // namespace
}  // namespace attnscope
