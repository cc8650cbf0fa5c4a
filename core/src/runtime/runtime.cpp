// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/runtime.h"

#include <torch/torch.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <atomic>
#include <mutex>
#include <thread>

#include "attnscope/error.h"
#include "runtime/runtime_init.h"

namespace attnscope {

namespace {
std::once_flag g_runtimeOnce;
// Set by setThreadCount, so that an explicit count (1 included) is never overridden.
std::atomic<bool> g_threadsChosen{false};
}  // namespace

void ensureRuntime() {
  std::call_once(g_runtimeOnce, [] {
#ifdef __GLIBC__
    // Fixed thresholds: blocks of 32 MiB and more (a GPT-2 layer's attention at T=1024 is 48 MB)
    // are mmapped and go back to the OS when freed. glibc's default raises the threshold after
    // each large free, after which a GPT-2 run at T=1024 kept ~190 MB of freed activations
    // resident. The threshold was 1 MiB, but then every mid-sized temporary (q, k, v, a 16 MB
    // score matrix) was mmapped, page-faulted and zeroed by the kernel on every run: the toy layer
    // at T = 512..1024 took twice Python's time (see BENCHMARKS.md). Up to 64 MiB of freed heap is
    // kept for the next run instead of being trimmed.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    if (!g_threadsChosen && at::get_num_threads() <= 1) setThreadCount(0);
  });
}

void setThreadCount(int threads) {
  g_threadsChosen = true;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
}

int threadCount() { return at::get_num_threads(); }

bool cudaAvailable() { return torch::cuda::is_available(); }

std::string resolveDevice(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Cuda:
      if (!cudaAvailable()) {
        throw Error(ErrorKind::Unavailable,
                    "device 'cuda' is not available: this LibTorch has no CUDA or no GPU was found "
                    "(use --device cpu or auto)");
      }
      return "cuda:0";
    case DeviceKind::Auto:
      return cudaAvailable() ? "cuda:0" : "cpu";
  }
  return "cpu";
}

std::string runtimeDescription() {
  return "LibTorch " + std::string(TORCH_VERSION) + ", " + std::to_string(threadCount()) +
         " threads, CUDA " + (cudaAvailable() ? "available" : "unavailable");
}

}  // namespace attnscope
