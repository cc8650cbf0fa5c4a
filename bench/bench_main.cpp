// SPDX-License-Identifier: GPL-3.0-or-later
// attnscope-bench [--threads=N] [--peak-rss=T,SCORES[,MODEL]] [Google Benchmark flags]
//   --threads=N        LibTorch intra-op threads (default 1: reproducible on a shared machine).
//   --peak-rss=T,S[,M] instead of benchmarking: one forward at T tokens (S=1 keeps scores) of
//                      M = gpt2 (default), smollm, bert, llama1b, llama1b-q4k (the same as a
//                      Q4_K_M GGUF), llama8b, gemma2 or mixtral in this fresh process
//                      with the default settings (memory limit, weight policy), then print JSON
//                      with VmHWM, the tensor sizes, the run's own memory estimate and its time.
//   --long-context=T,M[,MiB] instead of benchmarking (issue 33): a forward of T tokens with the
//                      attention on demand of M = llama1b (then every head's long-range profile
//                      and 64 x 64 thumbnail) or llama2l (then 512 x 512 tiles, min of 3), printing
//                      JSON with the times and VmHWM; MiB: the memory limit (default 8 GiB).
#include <benchmark/benchmark.h>

#include <QApplication>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/long_range.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/runtime.h"
#include "bench_support.h"

namespace {

/// The memory estimate Model::run checks before allocating (what a refusal prints), found by
/// bisecting the limit with the request cancelled: a probe stops at the memory check or right
/// after it, so none computes anything.
unsigned long long estimateBytes(const attnscope::Model& model, attnscope::RunRequest request) {
  using namespace attnscope;
  const std::atomic<bool> cancelled{true};
  request.cancel = &cancelled;
  unsigned long long lo = 0, hi = 1ull << 44;  // the estimate is in (lo, hi]
  while (hi - lo > 1) {
    const unsigned long long mid = lo + (hi - lo) / 2;
    request.limits.memoryLimitBytes = mid;
    try {
      model.run(request);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::ResourceLimit) {
        lo = mid;
        continue;
      }
    }
    hi = mid;
  }
  return hi;
}

int peakRss(int T, bool scores, const std::string& which) {
  using namespace attnscope;
  // Written by an earlier run or now.
  const std::string folder = which == "smollm"        ? bench::smolLmFolder()
                             : which == "bert"        ? bench::bertBaseFolder()
                             : which == "llama1b"     ? bench::llama1BFolder()
                             : which == "llama8b"     ? bench::llama8BFolder()
                             : which == "llama1b-q4k" ? bench::llama1BQ4KFile()
                             : which == "gemma2"      ? bench::gemma2Folder()
                             : which == "mixtral"     ? bench::mixtralFolder()
                                                      : bench::gpt2Folder();
  const long long before = bench::peakRssBytes();
  ModelSpec spec;
  spec.source = folder;
  const auto opening = std::chrono::steady_clock::now();
  const auto model = openModel(spec);
  const double openMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - opening).count();
  const long long loaded = bench::peakRssBytes();
  RunRequest request;
  request.texts = {which == "bert" ? bench::bertText(T) : bench::gpt2Text(T)};
  request.keepScores = scores;
  const unsigned long long estimate = estimateBytes(*model, request);
  const auto start = std::chrono::steady_clock::now();
  const AttentionResult r = model->run(request);
  const double runMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const long long peak = bench::peakRssBytes();
  const ModelInfo info = model->info();
  std::printf(
      "{\"model\": \"%s\", \"T\": %d, \"scores\": %s, \"threads\": %d, \"rss_start\": %lld, "
      "\"rss_after_load\": %lld, \"rss_peak\": %lld, \"estimate_bytes\": %llu, \"weights_bytes\": "
      "%llu, \"mapped_bytes\": %llu, \"attention_bytes\": %zu, \"scores_bytes\": %zu, "
      "\"open_ms\": %.0f, \"run_ms\": %.0f}\n",
      which.c_str(), T, scores ? "true" : "false", threadCount(), before, loaded, peak, estimate,
      static_cast<unsigned long long>(info.parameterBytes),
      static_cast<unsigned long long>(info.mappedBytes),
      r.group().attention.data.size() * sizeof(float), r.group().scores.data.size() * sizeof(float),
      openMs, runMs);
  return 0;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int longContext(int T, const std::string& which, long long memoryLimitMiB) {
  using namespace attnscope;
  const std::string folder =
      which == "llama2l" ? bench::llama2LayerFolder() : bench::llama1BFolder();
  ModelSpec spec;
  spec.source = folder;
  auto start = std::chrono::steady_clock::now();
  const auto model = openModel(spec);
  const double openMs = msSince(start);
  const long long loaded = bench::peakRssBytes();
  RunRequest request;
  request.texts = {bench::gpt2Text(T)};  // the folders' minimal vocabulary: T tokens exactly
  request.limits.maxTokens = T + 2;
  request.keepScores = false;
  request.attentionOnDemand = true;
  if (memoryLimitMiB > 0) request.limits.memoryLimitBytes = uint64_t(memoryLimitMiB) << 20;
  start = std::chrono::steady_clock::now();
  const AttentionResult r = model->run(request);
  const double runMs = msSince(start);
  const long long afterRun = bench::peakRssBytes();
  const AttentionGroup& g = r.group();
  const int L = g.layers(), H = g.heads();
  double analysisMs = 0, tileMs = 1e30, diagonalTileMs = 1e30, sinkMax = 0;
  if (which == "llama2l") {
    // A 512 x 512 tile where a window would look: the last rows over the first keys (the sink)
    // and on the diagonal, the fastest of three each.
    std::vector<float> tile(512 * 512);
    for (int i = 0; i < 3; ++i) {
      start = std::chrono::steady_clock::now();
      g.source->tile(L - 1, 0, H - 1, T - 512, T, 0, 512, tile.data());
      tileMs = std::min(tileMs, msSince(start));
      start = std::chrono::steady_clock::now();
      g.source->tile(L - 1, 0, H - 1, T - 512, T, T - 512, T, tile.data());
      diagonalTileMs = std::min(diagonalTileMs, msSince(start));
    }
  } else {
    // Every head's profile and thumbnail, the heads split over the threads.
    start = std::chrono::steady_clock::now();
    const int threads = std::max(1, threadCount());
    std::vector<double> sinks(static_cast<std::size_t>(L * H));
    std::vector<std::thread> pool;
    setThreadCount(1);  // each head's products on one thread, the heads side by side
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int i = t; i < L * H; i += threads) {
          sinks[static_cast<std::size_t>(i)] = longRangeProfile(g, i / H, 0, i % H).sinkShare;
          pooledAttention(g, i / H, 0, i % H, 64, 64);
        }
      });
    for (std::thread& th : pool) th.join();
    setThreadCount(threads);
    analysisMs = msSince(start);
    for (double v : sinks) sinkMax = std::max(sinkMax, v);
  }
  const ModelInfo info = model->info();
  std::printf(
      "{\"model\": \"%s\", \"T\": %d, \"threads\": %d, \"open_ms\": %.0f, \"run_ms\": %.0f, "
      "\"analysis_ms\": %.0f, \"tile_sink_ms\": %.1f, \"tile_diagonal_ms\": %.1f, "
      "\"rss_after_load\": %lld, \"rss_after_run\": %lld, \"rss_peak\": %lld, "
      "\"weights_bytes\": %llu, \"kept_bytes\": %llu, \"stored_attention_bytes\": %.0f, "
      "\"max_sink_share\": %.4f}\n",
      which.c_str(), T, threadCount(), openMs, runMs, analysisMs, tileMs > 1e29 ? 0.0 : tileMs,
      diagonalTileMs > 1e29 ? 0.0 : diagonalTileMs, loaded, afterRun, bench::peakRssBytes(),
      static_cast<unsigned long long>(info.parameterBytes),
      static_cast<unsigned long long>(g.source->bytes()), 4.0 * L * H * double(T) * T, sinkMax);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  attnscope::chooseBlasKernels();
  int threads = 1;
  std::vector<char*> rest;
  const char* rss = nullptr;
  const char* longRun = nullptr;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--peak-rss=", 11) == 0) {
      rss = argv[i] + 11;
    } else if (std::strncmp(argv[i], "--long-context=", 15) == 0) {
      longRun = argv[i] + 15;
    } else {
      rest.push_back(argv[i]);
    }
  }
  attnscope::setThreadCount(threads);
  if (rss) {
    int T = 1024, scores = 0;
    char which[16] = "gpt2";
    std::sscanf(rss, "%d,%d,%15s", &T, &scores, which);
    return peakRss(T, scores != 0, which);
  }
  if (longRun) {
    int T = 8192;
    long long limit = 0;
    char which[16] = "llama1b";
    std::sscanf(longRun, "%d,%15[^,],%lld", &T, which, &limit);
    return longContext(T, which, limit);
  }
  // The render benchmarks need a QApplication; scripts/bench.sh sets QT_QPA_PLATFORM=offscreen.
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 0);
  int qtArgc = 1;
  QApplication app(qtArgc, argv);

  int benchArgc = static_cast<int>(rest.size());
  benchmark::Initialize(&benchArgc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(benchArgc, rest.data())) return 1;
  benchmark::AddCustomContext("torch_threads", std::to_string(attnscope::threadCount()));
  benchmark::AddCustomContext("runtime", attnscope::runtimeDescription());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
