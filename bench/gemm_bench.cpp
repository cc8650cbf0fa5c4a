// SPDX-License-Identifier: GPL-3.0-or-later
// This machine's float32 GEMM rate with the same LibTorch and thread count: the yardstick for the
// attention FLOP rate.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace attnscope::bench {
namespace {

void BM_TorchMm(benchmark::State& state) {
  const int64_t n = state.range(0);
  torch::NoGradGuard noGrad;
  const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  torch::Tensor c = torch::empty({n, n});
  for (auto _ : state) {
    torch::mm_out(c, a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TorchMm)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->UseRealTime();

}  // namespace
}  // namespace attnscope::bench
