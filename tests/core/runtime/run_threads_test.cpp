// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

#include "attnscope/runtime.h"
#include "runtime/runtime_init.h"

namespace attnscope {
namespace {

TEST(RunThreads, FollowTheCoresOtherTasksLeaveFree) {
  EXPECT_EQ(threadsForLoad(2, 1, 2), 2) << "only the caller runs: every core";
  EXPECT_EQ(threadsForLoad(2, 2, 2), 1) << "one other task holds a core";
  EXPECT_EQ(threadsForLoad(2, 9, 2), 1) << "never below one";
  EXPECT_EQ(threadsForLoad(16, 5, 16), 12);
  EXPECT_EQ(threadsForLoad(4, 1, 16), 4) << "never above the chosen count";
  EXPECT_EQ(threadsForLoad(8, -1, 8), 8) << "no /proc/loadavg: the chosen count";
}

TEST(RunThreads, AnExplicitCountIsLeftAloneAndTheAdaptiveOneRestored) {
  setThreadCount(1);
  {
    const RunThreads guard;
    EXPECT_EQ(threadCount(), 1);
  }
  EXPECT_EQ(threadCount(), 1);
  setThreadCount(0);
  const int all = threadCount();
  {
    const RunThreads guard;
    EXPECT_GE(threadCount(), 1);
    EXPECT_LE(threadCount(), all);
  }
  EXPECT_EQ(threadCount(), all) << "restored after the run";
  EXPECT_TRUE(threadCountFollowsLoad());
  // Per thread: a count fixed on another thread (training's) leaves this one following the load.
  std::thread([] {
    setThreadCount(1);
    EXPECT_FALSE(threadCountFollowsLoad());
  }).join();
  EXPECT_TRUE(threadCountFollowsLoad());
}

// Issue 34: 1024 threads hung under an address-space limit, and OMP_NUM_THREADS=100000 hung while
// a run restored it. Both are lowered to the cores.
TEST(RunThreads, CountsAboveTheCoresAreLoweredToThem) {
  setThreadCount(0);
  const int cores = threadCount();
  setThreadCount(1024);
  EXPECT_EQ(threadCount(), std::min(cores, 1024));
  setThreadCount(0);
  at::set_num_threads(cores + 7);  // as OMP_NUM_THREADS above the cores leaves it
  {
    const RunThreads guard;
    EXPECT_LE(threadCount(), cores);
  }
  EXPECT_LE(threadCount(), cores) << "restored to more threads than cores";
  setThreadCount(0);
}

// A run too small to share out takes one thread even on an idle machine; an explicit count stays.
TEST(RunThreads, TinyRunsTakeOneThread) {
  setThreadCount(0);
  const int all = threadCount();
  {
    const RunThreads guard(RunThreads::kOneThreadFlops / 2);
    EXPECT_EQ(threadCount(), 1);
  }
  EXPECT_EQ(threadCount(), all) << "restored after the run";
  {
    const RunThreads guard(RunThreads::kOneThreadFlops * 100);
    EXPECT_GE(threadCount(), 1);
    EXPECT_LE(threadCount(), all);
  }
  setThreadCount(2);
  {
    const RunThreads guard(1.0);
    EXPECT_EQ(threadCount(), 2) << "the user's count is left alone";
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace attnscope
