// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/runtime.h"

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "attnscope/error.h"
#include "nn/widened_weights.h"
#include "runtime/blas_kernels.h"
#include "runtime/caching_cpu_allocator.h"
#include "runtime/runtime_init.h"

namespace attnscope {

namespace {
std::once_flag g_runtimeOnce;
// Set by setThreadCount, so that an explicit count (1 included) is never overridden.
std::atomic<bool> g_threadsChosen{false};
// setThreadCount(0): every core, less those other processes are running on at each run's start.
// Per thread, like OpenMP's own count: the training thread's fixed count leaves the compute
// thread's runs following the load.
thread_local bool t_threadsFollowLoad = true;

/// The CPUs this process may run on (its affinity mask, as taskset or a container sets it), at
/// least 1: more compute threads than that only take turns.
int cores() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int allowed = CPU_COUNT(&set);
    if (allowed > 0 && (n <= 0 || allowed < n)) n = allowed;
  }
  return std::max(n, 1);
}

/// Runnable tasks on the machine right now, from /proc/loadavg's fourth field ("2/431": running
/// / total), or -1 where there is no such file.
int runnableTasks() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double a, b, c;
  int running = -1, total = 0;
  if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
  std::fclose(f);
  return running;
}

/// This process's threads that are running or runnable now (the caller among them): the pool's
/// threads still spin for a moment after the work before a run (loading, the previous run), and
/// must not count as another process's load.
int ownRunnableThreads() {
  int n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::FILE* f = std::fopen((task.path() / "stat").c_str(), "r");
    if (!f) continue;
    char line[512];
    const std::size_t got = std::fread(line, 1, sizeof line - 1, f);
    std::fclose(f);
    line[got] = 0;
    // "tid (comm) S ...": the state follows the last ')' (comm may hold spaces and parentheses).
    const char* close = std::strrchr(line, ')');
    if (close && close[1] == ' ' && close[2] == 'R') ++n;
  }
  return std::max(n, 1);
}

}  // namespace

uint64_t availableMemoryBytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return static_cast<uint64_t>(kib) * 1024;
}

int threadsForLoad(int chosen, int runnable, int machineCores) {
  if (runnable < 1) return chosen;
  // The caller is one of the runnable tasks; every other one holds a core for now.
  const int free = machineCores - (runnable - 1);
  return std::clamp(free, 1, chosen);
}

RunThreads::RunThreads(double flops) {
  if (!t_threadsFollowLoad) return;
  const int chosen = cores();
  int n = 1;
  if (flops < 0 || flops >= kOneThreadFlops) {
    const int runnable = runnableTasks();
    // Other processes' tasks, plus the caller: what threadsForLoad counts.
    n = threadsForLoad(chosen, runnable < 1 ? runnable : runnable - ownRunnableThreads() + 1,
                       chosen);
  }
  // Restored afterwards, so never above the cores: OMP_NUM_THREADS=100000 made the restore start
  // a hundred thousand threads.
  m_previous = std::min(at::get_num_threads(), chosen);
  if (n != at::get_num_threads()) {
    at::set_num_threads(n);
    m_changed = true;
  }
}

RunThreads::~RunThreads() {
  if (m_changed) at::set_num_threads(m_previous);
}

void chooseBlasKernels() { BlasKernels::chooseFastest(); }

void ensureRuntime() {
  std::call_once(g_runtimeOnce, [] {
    // Where main did not choose them already (tests, library users): before the first product.
    BlasKernels::chooseFastest();
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
#if defined(__SANITIZE_ADDRESS__)
#define ATTNSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNSCOPE_ASAN 1
#endif
#endif
#ifndef ATTNSCOPE_ASAN
    // Activations from blocks kept across layers and runs (caching_cpu_allocator.h). Not under
    // AddressSanitizer, whose heap checks would then not see them.
    c10::SetCPUAllocator(&CachingCpuAllocator::instance(), /*priority=*/1);
#endif
    if (!g_threadsChosen && at::get_num_threads() <= 1) setThreadCount(0);
    // OMP_NUM_THREADS above the cores (100000 hung for minutes starting threads): the cores.
    if (at::get_num_threads() > cores()) at::set_num_threads(cores());
  });
}

void setThreadCount(int threads) {
  g_threadsChosen = true;
  t_threadsFollowLoad = threads <= 0;
  // At most the cores: 1024 threads under an address-space limit hung once thread creation
  // failed, and 512 took 17 s for a 22-character toy run.
  threads = threads <= 0 ? cores() : std::min(threads, cores());
  at::set_num_threads(threads);
}

int threadCount() { return at::get_num_threads(); }

bool threadCountFollowsLoad() { return t_threadsFollowLoad; }

uint64_t weightCacheBytesInProcess() { return WidenedWeights::bytesInProcess(); }

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
  ensureRuntime();  // the thread count and the kernels a run would use, not the process's defaults
  const std::string blas = BlasKernels::inUse();
  std::string kernels;
  if (!blas.empty()) {
    kernels = ", OpenBLAS " + blas + " kernels";
    if (BlasKernels::namedByEnvironment()) {
      kernels += " (named by OPENBLAS_CORETYPE)";
    } else if (!BlasKernels::replaced().empty()) {
      kernels += " (chosen by attnscope; OpenBLAS picked " + BlasKernels::replaced() + ")";
    }
  }
  return "LibTorch " + std::string(TORCH_VERSION) + ", " + std::to_string(threadCount()) +
         " threads, CUDA " + (cudaAvailable() ? "available" : "unavailable") + kernels;
}

}  // namespace attnscope
