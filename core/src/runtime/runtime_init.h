// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace attnscope {

/// Applies the default thread count once per process, unless setThreadCount was called first.
void ensureRuntime();

/// The intra-op threads for a run when the count follows the load (setThreadCount(0), the
/// default): `chosen` less the cores that the other runnable tasks hold, at least 1. `runnable`
/// counts the caller too (/proc/loadavg); below 1 (unknown) gives `chosen`.
///
/// Why: OpenMP threads that finish their share spin-wait for the others, so a thread that shares
/// its core with another process stalls the whole team. On 2 cores with one busy, GPT-2 at T = 128
/// took 1613 ms with 2 threads and 307 ms with 1 (bench/findings.md).
int threadsForLoad(int chosen, int runnable, int machineCores);

/// The memory the kernel says new allocations can take without swapping (/proc/meminfo's
/// MemAvailable: free pages plus reclaimable caches, memory-mapped weight files among them), or 0
/// where it cannot say.
uint64_t availableMemoryBytes();

/// For the length of one run: the thread count from threadsForLoad when it follows the load
/// (restored after); nothing when the user chose a count. A run of fewer than kOneThreadFlops
/// (`flops`: an upper bound; negative: unknown) takes one thread whatever the load: a team's
/// fork, join and spin-waits cost more than they share out there. Measured on the window's
/// keystroke bench (the bundled tiny GPT, 100 characters): 55 ms of compute with two threads
/// while the UI thread ran, against 3 ms with one.
class RunThreads final {
 public:
  static constexpr double kOneThreadFlops = 2e8;
  explicit RunThreads(double flops = -1);
  ~RunThreads();
  RunThreads(const RunThreads&) = delete;
  RunThreads& operator=(const RunThreads&) = delete;

 private:
  int m_previous = 0;
  bool m_changed = false;
};

}  // namespace attnscope
