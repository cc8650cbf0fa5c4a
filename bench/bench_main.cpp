// SPDX-License-Identifier: GPL-3.0-or-later
// attnscope-bench [--threads=N] [--peak-rss=T,SCORES[,MODEL]] [Google Benchmark flags]
//   --threads=N        LibTorch intra-op threads (default 1: reproducible on a shared machine).
//   --peak-rss=T,S[,M] instead of benchmarking: one forward at T tokens (S=1 keeps scores) of
//                      M = gpt2 (default), smollm, bert, llama1b, llama1b-q4k (the same as a
//                      Q4_K GGUF), llama8b, gemma2 or mixtral in this fresh process
//                      with the default settings (memory limit, weight policy), then print JSON
//                      with VmHWM, the tensor sizes, the run's own memory estimate and its time.
#include <benchmark/benchmark.h>

#include <QApplication>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnscope/error.h"
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
  const auto model = openModel(spec);
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
      "\"run_ms\": %.0f}\n",
      which.c_str(), T, scores ? "true" : "false", threadCount(), before, loaded, peak, estimate,
      static_cast<unsigned long long>(info.parameterBytes),
      static_cast<unsigned long long>(info.mappedBytes),
      r.group().attention.data.size() * sizeof(float), r.group().scores.data.size() * sizeof(float),
      runMs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  attnscope::chooseBlasKernels();
  int threads = 1;
  std::vector<char*> rest;
  const char* rss = nullptr;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--peak-rss=", 11) == 0) {
      rss = argv[i] + 11;
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
