// SPDX-License-Identifier: GPL-3.0-or-later
// Head ablation of every head of GPT-2 small shapes at T = 128, exact (reusing the unchanged
// layers below each ablated one) and estimated (attribution patching), through the public Model
// API, against one warm forward of the same model and text measured in the same process (CPU
// time), and the estimate's rank agreement (Spearman) with the exact values, for BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <optional>

#include "attnscope/head_ablation.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/rank_correlation.h"
#include "bench_support.h"

namespace attnscope::bench {
namespace {

constexpr int kTokens = 128;

std::shared_ptr<Model> gpt2() {
  static const std::shared_ptr<Model> model = [] {
    ModelSpec spec;
    spec.source = gpt2Folder();
    return openModel(spec);
  }();
  return model;
}

AblationRequest request(bool estimate) {
  AblationRequest a;
  a.run.texts = {gpt2Text(kTokens)};
  a.estimate = estimate;
  return a;
}

std::vector<double> changes(const HeadAblation& r) {
  return {r.logProbChange.data.begin(), r.logProbChange.data.end()};
}

// CPU milliseconds of f(): LibTorch runs on this thread (--threads=1, as scripts/bench.sh sets),
// and on a shared machine the wall clock also counts the time other jobs held the core.
double cpuMs(const std::function<void()>& f) {
  const std::clock_t start = std::clock();
  f();
  return 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

// One warm forward of the same model on the same text (the fastest of three, after one that pays
// the first run's weight check and page-in), measured here so that the ratios compare like with
// like in one process.
double forwardCpuMs() {
  static const double ms = [] {
    RunRequest run;
    run.texts = {gpt2Text(kTokens)};
    run.keepScores = false;
    gpt2()->run(run);
    double best = 1e300;
    for (int i = 0; i < 3; ++i) best = std::min(best, cpuMs([&] { gpt2()->run(run); }));
    return best;
  }();
  return ms;
}

// The exact values once per process: the estimate's benchmark ranks against them.
const HeadAblation& exactOnce() {
  static const HeadAblation r = gpt2()->ablateHeads(request(false));
  return r;
}

void BM_Gpt2AblationExact(benchmark::State& state) {
  const auto model = gpt2();
  const double forward = forwardCpuMs();
  std::optional<HeadAblation> r;
  double cpu = 0;
  for (auto _ : state) {
    cpu += cpuMs([&] { r = model->ablateHeads(request(false)); });
    if (static_cast<int>(r->tokens.size()) != kTokens)
      state.SkipWithError("the GPT-2 text did not give T tokens");
    benchmark::DoNotOptimize(r->probabilities.data.data());
  }
  const double heads = r ? r->layers * r->heads : 0;
  const double perCall = cpu / static_cast<double>(state.iterations());
  state.counters["heads"] = heads;
  state.counters["forward_cpu_ms"] = forward;
  state.counters["x_forward"] = perCall / forward;
  state.counters["x_all_forwards"] = perCall / (heads * forward);
}
BENCHMARK(BM_Gpt2AblationExact)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

void BM_Gpt2AblationEstimate(benchmark::State& state) {
  const auto model = gpt2();
  const HeadAblation& exact = exactOnce();  // before the timed loop
  const double forward = forwardCpuMs();
  std::optional<HeadAblation> r;
  double cpu = 0;
  for (auto _ : state) {
    cpu += cpuMs([&] { r = model->ablateHeads(request(true)); });
    benchmark::DoNotOptimize(r->probabilities.data.data());
  }
  state.counters["forward_cpu_ms"] = forward;
  state.counters["x_forward"] = cpu / static_cast<double>(state.iterations()) / forward;
  if (r) state.counters["spearman"] = spearmanCorrelation(changes(*r), changes(exact));
}
BENCHMARK(BM_Gpt2AblationEstimate)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

}  // namespace
}  // namespace attnscope::bench
