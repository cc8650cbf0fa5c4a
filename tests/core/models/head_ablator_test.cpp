// SPDX-License-Identifier: GPL-3.0-or-later
// Head ablation through the public Model API. Exact: every head of a GPT-2 against the plain-loop
// reference (reference_gpt2.cpp) run whole with that head's output zeroed; a head whose output
// weights are zero changes nothing, bit for bit. Estimate: against central differences of the
// same reference in the head's scale, and its rank agreement with the exact values on a 4 x 4
// model. Progress, cancel, the memory guard and the refusals. Llama, NeoX, Bloom and the encoders
// are checked against PyTorch in tests/reference/ablation_reference.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

#include "attnscope/error.h"
#include "attnscope/head_ablation.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/rank_correlation.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/toy_config.h"
#include "expect_close.h"
#include "expect_error.h"
#include "reference_gpt2.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the value-norm and GPT-2
// tests.
namespace head_ablator_test {

constexpr const char* kText = "hello the world";

std::string scientific(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2e", v);
  return buffer;
}

std::shared_ptr<Model> openFolder(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

AblationRequest ablation(const std::string& text, bool estimate = false) {
  AblationRequest a;
  a.run.texts = {text};
  a.run.device = DeviceKind::Cpu;
  a.estimate = estimate;
  return a;
}

std::vector<int64_t> idsOf(const std::vector<Token>& tokens) {
  std::vector<int64_t> ids;
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

// log softmax(logits)[id] in doubles.
double logProbability(const std::vector<double>& logits, int64_t id) {
  double top = -INFINITY;
  for (double v : logits) top = std::max(top, v);
  double sum = 0;
  for (double v : logits) sum += std::exp(v - top);
  return logits[static_cast<std::size_t>(id)] - top - std::log(sum);
}

TEST(HeadAblator, Gpt2EveryHeadMatchesAPlainLoopRerunWithTheHeadZeroed) {
  test::TempDir dir;
  const test::TinyGpt2 spec;  // 2 layers x 4 heads
  const auto weights = test::writeTinyGpt2(dir.path("model"), spec);
  int calls = 0, lastDone = 0;
  AblationRequest a = ablation(kText);
  a.progress = [&](int done, int total) {
    ++calls;
    EXPECT_EQ(done, lastDone + 1);
    EXPECT_EQ(total, spec.layers * spec.heads);
    lastDone = done;
  };
  const HeadAblation r = openFolder(dir.path("model"))->ablateHeads(a);
  EXPECT_EQ(calls, spec.layers * spec.heads);
  ASSERT_EQ(r.layers, spec.layers);
  ASSERT_EQ(r.heads, spec.heads);
  EXPECT_FALSE(r.estimate);
  EXPECT_FALSE(r.maskFill);
  const std::vector<int64_t> ids = idsOf(r.tokens);
  EXPECT_EQ(r.position, static_cast<int>(ids.size()) - 1);

  const test::ReferenceGpt2 base = test::referenceGpt2(weights, spec.layers, spec.heads, ids);
  const auto top = std::max_element(base.lastLogits.begin(), base.lastLogits.end());
  EXPECT_EQ(r.target.id, top - base.lastLogits.begin()) << "the unablated top-1 token";
  const double baseLog = logProbability(base.lastLogits, r.target.id);
  EXPECT_NEAR(r.baseline, std::exp(baseLog), 1e-6);
  double worst = 0, largestChange = 0;
  for (int l = 0; l < spec.layers; ++l) {
    for (int h = 0; h < spec.heads; ++h) {
      const test::ReferenceGpt2 ablated =
          test::referenceGpt2(weights, spec.layers, spec.heads, ids, 1e-5, {l, h, 0.0});
      const double logP = logProbability(ablated.lastLogits, r.target.id);
      worst = std::max(worst, std::abs(r.probability(l, h) - std::exp(logP)));
      // A change of log p can be far above 1 (a head that carries the prediction).
      EXPECT_NEAR(r.change(l, h), logP - baseLog, test::closeTolerance(logP - baseLog, 1e-4))
          << "layer " << l << " head " << h;
      largestChange = std::max(largestChange, std::abs(std::exp(logP) - std::exp(baseLog)));
    }
  }
  RecordProperty("worst_abs_error", scientific(worst));
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(largestChange, 1e-3) << "no head matters: the comparison could not fail";
}

TEST(HeadAblator, HeadWithZeroOutputWeightsChangesNothing) {
  test::TempDir dir;
  const test::TinyGpt2 spec;
  const int zeroLayer = 1, zeroHead = 2;
  test::writeTinyGpt2WithSilentHead(dir.path("model"), spec, zeroLayer, zeroHead);
  const auto model = openFolder(dir.path("model"));
  const HeadAblation r = model->ablateHeads(ablation(kText));
  for (int l = 0; l < spec.layers; ++l) {
    for (int h = 0; h < spec.heads; ++h) {
      if (l == zeroLayer && h == zeroHead) {
        EXPECT_EQ(r.probability(l, h), static_cast<float>(r.baseline));
        EXPECT_EQ(r.change(l, h), 0.0f);
      } else {
        EXPECT_NE(r.change(l, h), 0.0f) << "layer " << l << " head " << h;
      }
    }
  }
  // The estimate's slope of an irrelevant head is exactly 0 too: its gradient meets zero weights.
  const HeadAblation e = model->ablateHeads(ablation(kText, true));
  EXPECT_EQ(e.change(zeroLayer, zeroHead), 0.0f);
  // And the unablated run agrees with the plain run's top prediction.
  RunRequest run;
  run.texts = {kText};
  const AttentionResult plain = model->run(run);
  EXPECT_EQ(plain.nextToken.front().token.id, r.target.id);
  EXPECT_NEAR(plain.nextToken.front().probability, r.baseline, 1e-6);
}

// Δ log p ≈ −∂ log p / ∂m at m = 1, with the derivative from central differences of the
// double-precision reference: (log p(1 + ε) − log p(1 − ε)) / 2ε.
TEST(HeadAblator, Gpt2EstimateIsMinusTheSlopeOfLogPInTheHeadScale) {
  test::TempDir dir;
  const test::TinyGpt2 spec;
  const auto weights = test::writeTinyGpt2(dir.path("model"), spec);
  int calls = 0;
  AblationRequest a = ablation(kText, true);
  a.progress = [&](int done, int total) {
    ++calls;
    EXPECT_EQ(done, total);
  };
  const HeadAblation r = openFolder(dir.path("model"))->ablateHeads(a);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(r.estimate);
  const std::vector<int64_t> ids = idsOf(r.tokens);
  constexpr double eps = 1e-4;
  double worst = 0, largest = 0;
  for (int l = 0; l < spec.layers; ++l) {
    for (int h = 0; h < spec.heads; ++h) {
      const auto logP = [&](double factor) {
        return logProbability(
            test::referenceGpt2(weights, spec.layers, spec.heads, ids, 1e-5, {l, h, factor})
                .lastLogits,
            r.target.id);
      };
      const double slope = (logP(1 + eps) - logP(1 - eps)) / (2 * eps);
      worst = std::max(worst, test::closeError(r.change(l, h), -slope));
      largest = std::max(largest, std::abs(slope));
      // The first-order value can leave [0, 1]; the estimate clamps it to a probability.
      const double linear = std::clamp(r.baseline * (1 - slope), 0.0, 1.0);
      EXPECT_NEAR(r.probability(l, h), linear, test::closeTolerance(linear, 1e-5));
    }
  }
  RecordProperty("worst_error", scientific(worst));  // |diff| / max(1, |slope|)
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(largest, 1e-2) << "every slope is negligible: the comparison could not fail";
}

// What the estimate is for: ordering heads the way the exact ablation does. On a 4 x 4 GPT-2 with
// small random weights (seed 5; measured Spearman 0.785) the ranks must agree clearly; a wrong
// sign gives about −0.8, an unrelated order about 0.
TEST(HeadAblator, EstimateRanksHeadsLikeTheExactAblation) {
  test::TempDir dir;
  test::TinyGpt2 spec;
  spec.layers = 4;
  spec.seed = 5;
  test::writeTinyGpt2(dir.path("model"), spec);
  const auto model = openFolder(dir.path("model"));
  const std::string text = "the cat and the dog and the cat";
  const HeadAblation exact = model->ablateHeads(ablation(text));
  const HeadAblation estimate = model->ablateHeads(ablation(text, true));
  EXPECT_EQ(exact.target.id, estimate.target.id);
  EXPECT_DOUBLE_EQ(exact.baseline, estimate.baseline);
  const std::vector<double> a(exact.logProbChange.data.begin(), exact.logProbChange.data.end()),
      b(estimate.logProbChange.data.begin(), estimate.logProbChange.data.end());
  const double rho = spearmanCorrelation(a, b);
  RecordProperty("spearman", std::to_string(rho));
  EXPECT_GT(rho, 0.7);
}

TEST(HeadAblator, TinyGptPerHeadModulesAblateToo) {
  TinyGptConfig config;
  config.nEmbd = 16;
  config.nHead = 4;
  config.nLayer = 2;
  config.blockSize = 16;
  const auto model = TinyGpt::create(config, TinyGpt::vocabularyOf("abcdefgh "), 3).asModel();
  const HeadAblation exact = model->ablateHeads(ablation("abc deaf gab"));
  const HeadAblation estimate = model->ablateHeads(ablation("abc deaf gab", true));
  ASSERT_EQ(exact.probabilities.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(exact.target.id, estimate.target.id);
  double moved = 0;
  for (std::size_t i = 0; i < exact.probabilities.data.size(); ++i) {
    moved = std::max(moved, std::abs(exact.probabilities.data[i] - exact.baseline));
    EXPECT_GE(exact.probabilities.data[i], 0.0f);
    EXPECT_LE(exact.probabilities.data[i], 1.0f);
    EXPECT_TRUE(std::isfinite(estimate.logProbChange.data[i]));
  }
  EXPECT_GT(moved, 0.0);
}

TEST(HeadAblator, CancelStopsBetweenHeadsAndTheMemoryGuardRefusesFirst) {
  test::TempDir dir;
  test::writeTinyGpt2(dir.path("model"), {});
  const auto model = openFolder(dir.path("model"));
  std::atomic<bool> cancel{false};
  int calls = 0;
  AblationRequest a = ablation(kText);
  a.run.cancel = &cancel;
  a.progress = [&](int done, int) {
    ++calls;
    if (done == 3) cancel = true;
  };
  test::expectError([&] { model->ablateHeads(a); }, ErrorKind::Cancelled, "");
  EXPECT_EQ(calls, 3);

  calls = 0;
  cancel = false;
  a.run.limits.memoryLimitBytes = 1000;
  test::expectError([&] { model->ablateHeads(a); }, ErrorKind::ResourceLimit, "ablating the 8");
  a.estimate = true;
  test::expectError([&] { model->ablateHeads(a); }, ErrorKind::ResourceLimit, "estimating");
  EXPECT_EQ(calls, 0);
}

TEST(HeadAblator, RefusesWhatHasNoPrediction) {
  test::TempDir dir;
  test::writeTinyGpt2(dir.path("model"), {});
  const auto gpt2 = openFolder(dir.path("model"));
  AblationRequest random = ablation(kText);
  random.run.random = RandomInput{1, 4};
  test::expectError([&] { gpt2->ablateHeads(random); }, ErrorKind::InvalidArgument,
                    "not random input");
  AblationRequest position = ablation(kText);
  position.maskPosition = 1;
  test::expectError([&] { gpt2->ablateHeads(position); }, ErrorKind::InvalidArgument,
                    "fills no masks");
  const auto toy = makeToyModel(ToyConfig{});
  test::expectError([&] { toy->ablateHeads(ablation("a b c")); }, ErrorKind::InvalidArgument,
                    "predicts no token");
}

}  // namespace head_ablator_test
}  // namespace attnscope
