// SPDX-License-Identifier: GPL-3.0-or-later
// attnscope-bench [--threads=N] [--peak-rss=T,SCORES] [Google Benchmark flags]
//   --threads=N        LibTorch intra-op threads (default 1: reproducible on a shared machine).
//   --peak-rss=T,S     instead of benchmarking: one GPT-2 forward at T tokens (S=1 keeps scores)
//                      in this fresh process, then print JSON with VmHWM and the tensor sizes.
#include <benchmark/benchmark.h>

#include <QApplication>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/runtime.h"
#include "bench_support.h"

namespace {

int peakRss(int T, bool scores) {
  using namespace attnscope;
  const std::string folder = bench::gpt2Folder();  // written by an earlier run or now
  const long long before = bench::peakRssBytes();
  ModelSpec spec;
  spec.source = folder;
  const auto model = openModel(spec);
  const long long loaded = bench::peakRssBytes();
  RunRequest request;
  request.texts = {bench::gpt2Text(T)};
  request.keepScores = scores;
  const AttentionResult r = model->run(request);
  const long long peak = bench::peakRssBytes();
  const ModelInfo info = model->info();
  std::printf(
      "{\"T\": %d, \"scores\": %s, \"threads\": %d, \"rss_start\": %lld, \"rss_after_load\": %lld, "
      "\"rss_peak\": %lld, \"weights_bytes\": %llu, \"attention_bytes\": %zu, \"scores_bytes\": "
      "%zu}\n",
      T, scores ? "true" : "false", threadCount(), before, loaded, peak,
      static_cast<unsigned long long>(info.parameterBytes),
      r.group().attention.data.size() * sizeof(float),
      r.group().scores.data.size() * sizeof(float));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
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
    std::sscanf(rss, "%d,%d", &T, &scores);
    return peakRss(T, scores != 0);
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
