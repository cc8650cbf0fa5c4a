// SPDX-License-Identifier: GPL-3.0-or-later
// One generation step through the key/value cache at T = 1024 (Model::startGeneration): the step
// that writes the 1024th token, its query attending over the 1023 before it (GPT-2's 1024
// positions hold no more: a step's new token must fit them too), for
// the GPT-2-small-shaped and SmolLM-135M-shaped random models: what the window's Step and Play
// cost per token once the prompt is in the cache. The uncached re-run it replaces is one whole
// forward over the 1024 tokens (BM_Gpt2Forward/T:1024/scores:0, BM_SmolLmForward/T:1024/
// scores:0); bench_python.py times the same cached step in PyTorch (--generation).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "attnscope/generation.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "bench_support.h"

namespace attnscope::bench {
namespace {

/// A prompt of T - 2 tokens runs through the cache untimed (the first step: the prompt's forward),
/// then the timed step runs the token it chose, attending over T - 1 keys, writes token T and
/// keeps its attention row as the window does. A generation cannot be rewound, so each iteration
/// starts a new one with the timer paused.
void generationStep(benchmark::State& state, const std::string& folder) {
  const int T = static_cast<int>(state.range(0));
  ModelSpec spec;
  spec.source = folder;
  const auto model = openModel(spec);
  GenerationRequest request;
  request.text = gpt2Text(T - 2);
  request.maxNewTokens = 2;
  request.keepAttention = true;
  const StepOptions greedy;
  for (auto _ : state) {
    state.PauseTiming();
    const std::unique_ptr<Generation> g = model->startGeneration(request);
    g->step(greedy);  // the prompt through the cache
    state.ResumeTiming();
    const GenerationStep s = g->step(greedy);
    if (s.attention.shape.size() != 3 || s.attention.shape[2] != T - 1)
      state.SkipWithError("the step did not attend over T - 1 keys");
    benchmark::DoNotOptimize(s.attention.data.data());
  }
}

void BM_Gpt2GenerationStep(benchmark::State& state) { generationStep(state, gpt2Folder()); }
BENCHMARK(BM_Gpt2GenerationStep)
    ->ArgNames({"T"})
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(8)
    ->UseRealTime();

void BM_SmolLmGenerationStep(benchmark::State& state) { generationStep(state, smolLmFolder()); }
BENCHMARK(BM_SmolLmGenerationStep)
    ->ArgNames({"T"})
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(8)
    ->UseRealTime();

}  // namespace
}  // namespace attnscope::bench
