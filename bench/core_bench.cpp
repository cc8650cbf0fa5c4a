// SPDX-License-Identifier: GPL-3.0-or-later
// Forward passes through the public Model API, the way the GUI and the CLI run them.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>

#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/toy_config.h"
#include "bench_support.h"

namespace attnscope::bench {
namespace {

// Multiply-add FLOPs of one toy forward: qkv projections, q·kᵀ, weights·v, output projection.
double toyMatmulFlops(double B, double T, double in, double C) {
  return 2 * B * T * in * 3 * C + 4 * B * T * T * C + 2 * B * T * C * C;
}

void runToy(benchmark::State& state, Variant variant, int batch, int T, int inputDim, int dModel,
            int heads) {
  ToyConfig config;
  config.variant = variant;
  config.inputDim = inputDim;
  config.dModel = dModel;
  config.heads = heads;
  const auto model = makeToyModel(config);
  RunRequest request;
  request.random = RandomInput{batch, T};
  request.keepScores = false;  // the Python modules return (out, weights) only
  // Once untimed: a repeat is what the window runs on each edit (the result's memory is reused,
  // tensor_allocator.cpp), and bench_python.py warms its modules up the same way.
  model->run(request);
  for (auto _ : state) {
    AttentionResult r = model->run(request);
    benchmark::DoNotOptimize(r.group().attention.data.data());
  }
  state.counters["matmul_flops"] = benchmark::Counter(
      toyMatmulFlops(batch, T, inputDim, dModel), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["attention_bytes"] = 4.0 * batch * heads * T * T;
}

// T x H grid with d_model = 64·H (head size 64), input width = d_model, batch 1.
void BM_ToyFused(benchmark::State& s) {
  const int T = static_cast<int>(s.range(0)), H = static_cast<int>(s.range(1));
  runToy(s, Variant::Fused, 1, T, 64 * H, 64 * H, H);
}
void BM_ToyPerHead(benchmark::State& s) {
  const int T = static_cast<int>(s.range(0)), H = static_cast<int>(s.range(1));
  runToy(s, Variant::PerHead, 1, T, 64 * H, 64 * H, H);
}
void toyGrid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"T", "H"})->Unit(benchmark::kMillisecond)->MinTime(0.3)->UseRealTime();
  for (int T : {16, 128, 512, 1024, 4096})
    for (int H : {4, 8, 12}) b->Args({T, H});
}
BENCHMARK(BM_ToyFused)->Apply(toyGrid);
BENCHMARK(BM_ToyPerHead)->Apply(toyGrid);

// The tutorial's set-up: batch 30, 5 tokens, 1024 -> 512, 8 heads.
void BM_ToyTutorialFused(benchmark::State& s) { runToy(s, Variant::Fused, 30, 5, 1024, 512, 8); }
void BM_ToyTutorialPerHead(benchmark::State& s) {
  runToy(s, Variant::PerHead, 30, 5, 1024, 512, 8);
}
BENCHMARK(BM_ToyTutorialFused)->Unit(benchmark::kMicrosecond)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_ToyTutorialPerHead)->Unit(benchmark::kMicrosecond)->MinTime(0.5)->UseRealTime();

// The chapter's tiny GPT: 4 layers x 4 heads x 64, block 128, T = 128.
void BM_TinyGptForward(benchmark::State& state) {
  std::vector<std::string> vocab;
  for (char c = 'a'; c <= 'z'; ++c) vocab.emplace_back(1, c);
  TinyGptConfig config;  // 4 x 4 x 64, block 128
  const auto model = TinyGpt::create(config, vocab, 1).asModel();
  std::string text;
  for (int i = 0; i < 128; ++i) text += static_cast<char>('a' + i % 26);
  RunRequest request;
  request.texts = {text};
  request.keepScores = false;
  for (auto _ : state) {
    AttentionResult r = model->run(request);
    benchmark::DoNotOptimize(r.group().attention.data.data());
  }
}
BENCHMARK(BM_TinyGptForward)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();

/// GPT-2 small shapes, random weights, opened from a Hugging Face folder through openModel, and a
/// request for a text of T tokens, run once. Warm: the first run pages the mapped weights in and
/// checks them for NaN once (the Python module holds its weights in memory already); with one
/// timed iteration it would count that.
struct WarmGpt2 {
  std::shared_ptr<Model> model;
  RunRequest request;
};
WarmGpt2 warmGpt2(int T, bool keepScores) {
  ModelSpec spec;
  spec.source = gpt2Folder();
  WarmGpt2 w{openModel(spec), {}};
  w.request.texts = {gpt2Text(T)};
  w.request.keepScores = keepScores;
  w.model->run(w.request);
  return w;
}

void BM_Gpt2Forward(benchmark::State& state) {
  const int T = static_cast<int>(state.range(0));
  const auto [model, request] = warmGpt2(T, state.range(1) != 0);
  for (auto _ : state) {
    AttentionResult r = model->run(request);
    if (r.group().queries() != T) state.SkipWithError("the GPT-2 text did not give T tokens");
    benchmark::DoNotOptimize(r.group().attention.data.data());
  }
  state.counters["attention_bytes"] = 4.0 * 12 * 12 * T * T;
}
BENCHMARK(BM_Gpt2Forward)
    ->ArgNames({"T", "scores"})
    ->Args({128, 0})
    ->Args({1000, 0})
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// When the window could show the first layer: RunRequest::preview's call (the window's path,
// one layer's attention copied) against the end of the same run, GPT-2 small shapes at T = 1000.
void BM_Gpt2FirstLayer(benchmark::State& state) {
  auto [model, request] = warmGpt2(static_cast<int>(state.range(0)), false);
  std::chrono::steady_clock::time_point start, first;
  request.preview = [&](AttentionResult) { first = std::chrono::steady_clock::now(); };
  // Once untimed with the preview too: in the window every edit's preview reuses the memory of
  // the one before (tensor_allocator.cpp), and the warm run above made none.
  model->run(request);
  double firstMs = 0, totalMs = 0;
  for (auto _ : state) {
    start = std::chrono::steady_clock::now();
    AttentionResult r = model->run(request);
    const auto end = std::chrono::steady_clock::now();
    firstMs += std::chrono::duration<double, std::milli>(first - start).count();
    totalMs += std::chrono::duration<double, std::milli>(end - start).count();
    benchmark::DoNotOptimize(r.group().attention.data.data());
  }
  state.counters["first_layer_ms"] = firstMs / static_cast<double>(state.iterations());
  state.counters["first_layer_fraction"] = firstMs / totalMs;
}
BENCHMARK(BM_Gpt2FirstLayer)
    ->ArgNames({"T"})
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

/// Writes what bench_python.py checks its forward against before timing it:
/// scratchDir()/NAME-T<T>.json (the token ids, the last layer's index and head count) and
/// NAME-T<T>.attention.f32 (the last layer's attention of item 0, [heads, T, T] float32).
void writeLastLayer(const std::string& name, const AttentionResult& r) {
  const AttentionGroup& g = r.group();
  const int64_t L = g.attention.shape[0], B = g.attention.shape[1], H = g.attention.shape[2],
                T = g.attention.shape[3];
  const std::string base = scratchDir() + "/" + name + "-T" + std::to_string(T);
  nlohmann::json ids = nlohmann::json::array();
  for (const Token& t : g.tokens[0]) ids.push_back(t.id);
  std::ofstream(base + ".json")
      << nlohmann::json{{"ids", ids}, {"layer", L - 1}, {"heads", H}, {"T", T}}.dump();
  const float* last = g.attention.data.data() + (L - 1) * B * H * T * T;
  std::ofstream(base + ".attention.f32", std::ios::binary)
      .write(reinterpret_cast<const char*>(last),
             static_cast<std::streamsize>(H * T * T * sizeof(float)));
}

/// One forward of a Hugging Face folder on a text of T tokens per iteration (range 0: T, range 1:
/// keep scores), opened once through openModel as the window and the CLI do. With a
/// lastLayerName, the warm run's last layer is written for bench_python.py (writeLastLayer).
void folderForward(benchmark::State& state, const std::string& folder, std::string (*text)(int),
                   double attentionFloatsPerToken2, const char* lastLayerName = nullptr) {
  const int T = static_cast<int>(state.range(0));
  ModelSpec spec;
  spec.source = folder;
  const auto model = openModel(spec);
  RunRequest request;
  request.texts = {text(T)};
  request.keepScores = state.range(1) != 0;
  {
    const AttentionResult warm = model->run(request);  // warm, as in BM_Gpt2Forward
    if (lastLayerName) writeLastLayer(lastLayerName, warm);
  }  // freed before the timed runs, as a result the window replaces
  for (auto _ : state) {
    AttentionResult r = model->run(request);
    if (r.group().queries() != T) state.SkipWithError("the text did not give T tokens");
    benchmark::DoNotOptimize(r.group().attention.data.data());
  }
  state.counters["attention_bytes"] = 4.0 * attentionFloatsPerToken2 * T * T;
}

// bert-base shapes (12 layers x 12 heads, 768 wide), random weights: the post-norm encoder with
// token types, no mask, at BERT's longest input.
void BM_BertBaseForward(benchmark::State& state) {
  folderForward(state, bertBaseFolder(), bertText, 12 * 12);
}
BENCHMARK(BM_BertBaseForward)
    ->ArgNames({"T", "scores"})
    ->Args({512, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// t5-small shapes (6 + 6 layers x 8 heads, 512 wide), random weights: 64 source tokens and 64
// decoder inputs (teacher forcing), every encoder, decoder and cross-attention kept.
void BM_T5SmallForward(benchmark::State& state) {
  ModelSpec spec;
  spec.source = t5SmallFolder();
  const auto model = openModel(spec);
  RunRequest request;
  request.texts = {t5Text(9)};
  request.target = t5Text(9);
  request.keepScores = state.range(1) != 0;
  // Once before timing: the first run pages in the mapped weights and scans them for NaN, which a
  // forward of this size (a tenth of a second) would not amortise in a few iterations; the Python
  // module's weights are in memory already.
  model->run(request);
  for (auto _ : state) {
    AttentionResult r = model->run(request);
    if (r.group().queries() != state.range(0) || r.group("cross").queries() != state.range(0))
      state.SkipWithError("the texts did not give 64 source and 64 decoder tokens");
    benchmark::DoNotOptimize(r.group("cross").attention.data.data());
  }
  state.counters["attention_bytes"] = 4.0 * 8 * 6 * 3 * 64 * 64;
}
BENCHMARK(BM_T5SmallForward)
    ->ArgNames({"T", "scores"})
    ->Args({64, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->UseRealTime();

// SmolLM-135M shapes (30 layers, 9 query / 3 key-value heads, 576 wide), random weights: RMSNorm,
// rotary, repeat_kv, SwiGLU.
void BM_SmolLmForward(benchmark::State& state) {
  folderForward(state, smolLmFolder(), gpt2Text, 30 * 9);
}
BENCHMARK(BM_SmolLmForward)
    ->ArgNames({"T", "scores"})
    ->Args({1024, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// Gemma-2-2B shapes (26 layers, 8 q / 4 kv heads of 256, 2304 wide, vocab 256000), random BF16
// weights: (1 + w) RMSNorm before and after the attention and the MLP, GeGLU, sqrt(hidden)
// embedding scale, attention soft-cap 50, final soft-cap 30, sliding window 4096 on alternating
// layers (no effect below 4096 tokens).
void BM_Gemma2Forward(benchmark::State& state) {
  folderForward(state, gemma2Folder(), gpt2Text, 26 * 8, "gemma2-2b");
}
BENCHMARK(BM_Gemma2Forward)
    ->ArgNames({"T", "scores"})
    ->Args({512, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// Mixtral-8x7B's attention (4096 wide, 32 q / 8 kv heads) with scaled-down experts: 4 layers,
// 8 experts of 2048, top-2 renormalised; random BF16 weights.
void BM_MixtralForward(benchmark::State& state) {
  folderForward(state, mixtralFolder(), gpt2Text, 4 * 32, "mixtral-4l");
}
BENCHMARK(BM_MixtralForward)
    ->ArgNames({"T", "scores"})
    ->Args({512, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();

// What a keystroke costs with a Llama-3.2-1B-shaped BF16 model: a 14-token run in a process that
// has run the model once already, as the window does on every edit. kept:0 widens every weight to
// float32 again on every run (the CLI's one-shot policy); kept:1 reads the float32 copies the
// first run kept (RunLimits::kAutoWeightCache, the window's policy). The arithmetic floor is
// 2 x 1.24 G parameters x 14 tokens = 35 GFLOP.
void BM_Llama1BKeystroke(benchmark::State& state) {
  ModelSpec spec;
  spec.source = llama1BFolder();
  spec.memoryLimitBytes = 20ull << 30;
  static std::shared_ptr<Model> model;
  if (!model) model = openModel(spec);
  RunRequest request;
  request.texts = {gpt2Text(14)};
  request.keepScores = false;
  request.limits.memoryLimitBytes = 20ull << 30;
  request.limits.weightCacheBytes = state.range(0) ? RunLimits::kAutoWeightCache : 0;
  model->run(request);  // the run before the keystroke: pages weights in, keeps copies if asked
  for (auto _ : state) {
    AttentionResult r = model->run(request);
    benchmark::DoNotOptimize(r.group().attention.data.data());
  }
  state.counters["weight_copies_bytes"] = static_cast<double>(model->info().weightCacheBytes);
  state.counters["floor_gflop"] = 2.0 * 1.2358e9 * 14 / 1e9;
  if (state.range(0) == 0) return;
  request.limits.weightCacheBytes = 0;  // give the copies back before the next benchmark
  model->run(request);
}
BENCHMARK(BM_Llama1BKeystroke)
    ->ArgNames({"kept"})
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

}  // namespace
}  // namespace attnscope::bench
