// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/caching_cpu_allocator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <vector>

namespace attnscope {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

class CachingCpuAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As ensureRuntime does for the whole program (attnscope_core's runtime.cpp).
    c10::SetCPUAllocator(&a(), /*priority=*/1);
    a().releaseCached();
  }
  void TearDown() override { a().releaseCached(); }
  static CachingCpuAllocator& a() { return CachingCpuAllocator::instance(); }
};

// A freed block serves the next request of about its size (a layer's activation reusing the
// previous layer's), not one much smaller; every byte of it is usable.
TEST_F(CachingCpuAllocatorTest, AFreedBlockServesTheNextTensorOfAboutItsSize) {
  // GPT-2's hidden states at 1000 tokens, then at 1001 (a character typed).
  const std::size_t tokens1000 = 1000 * 768 * 4, tokens1001 = 1001 * 768 * 4;
  const std::size_t live = a().liveBytes();
  void* first = nullptr;
  {
    c10::DataPtr p = a().allocate(tokens1000);
    first = p.get();
    EXPECT_GE(a().liveBytes(), live + tokens1000);
    std::memset(p.get(), 1, tokens1000);
  }
  EXPECT_EQ(a().liveBytes(), live);
  EXPECT_GE(a().cachedBytes(), tokens1000);
  {
    // A token longer still fits the same 64 KiB-rounded block.
    c10::DataPtr again = a().allocate(tokens1001);
    EXPECT_EQ(again.get(), first);
    std::memset(again.get(), 2, tokens1001);
    EXPECT_EQ(a().cachedBytes(), 0u);
    // Another one while it is live: a new block.
    c10::DataPtr other = a().allocate(tokens1000);
    EXPECT_NE(other.get(), first);
  }
  {
    // Much smaller than the kept block: not pinned to it.
    c10::DataPtr small = a().allocate(kMiB + 1);
    EXPECT_NE(small.get(), first);
  }
  a().releaseCached();
  EXPECT_EQ(a().cachedBytes(), 0u);
}

// Of several free blocks that fit, the one freed last serves the next tensor: its pages are
// resident. (A model's placeholder parameters leave untouched blocks behind when the checkpoint's
// tensors replace them; taking those first made every GPT-2 layer touch a fresh qkv block.)
TEST_F(CachingCpuAllocatorTest, TheBlockFreedLastServesFirst) {
  const std::size_t bytes = 9 * kMiB;
  c10::DataPtr older = a().allocate(bytes), newer = a().allocate(bytes);
  void* const newerData = newer.get();
  void* const olderData = older.get();
  older.clear();  // freed first: an untouched placeholder
  std::memset(newer.get(), 1, bytes);
  newer.clear();  // freed last: resident
  c10::DataPtr next = a().allocate(bytes);
  EXPECT_EQ(next.get(), newerData);
  c10::DataPtr after = a().allocate(bytes);
  EXPECT_EQ(after.get(), olderData);
}

// Small tensors are the default allocator's; raw_allocate / raw_deallocate work for both kinds.
TEST_F(CachingCpuAllocatorTest, SmallTensorsAndRawPointersGoWhereTheyCameFrom) {
  const std::size_t live = a().liveBytes();
  {
    c10::DataPtr small = a().allocate(4096);
    EXPECT_EQ(a().liveBytes(), live);
    EXPECT_NE(small.get_deleter(), a().raw_deleter());
  }
  for (const std::size_t n : {std::size_t{4096}, 2 * kMiB}) {
    void* p = a().raw_allocate(n);
    std::memset(p, 3, n);
    a().raw_deallocate(p);
  }
  EXPECT_EQ(a().liveBytes(), live);
}

// Past the cap the longest unused blocks are unmapped.
TEST_F(CachingCpuAllocatorTest, KeepsAtMostItsCap) {
  const std::size_t block = 64 * kMiB;
  std::vector<c10::DataPtr> blocks;
  for (std::size_t held = 0; held <= CachingCpuAllocator::kMaxCachedBytes + block; held += block)
    blocks.push_back(a().allocate(block));
  blocks.clear();
  EXPECT_LE(a().cachedBytes(), CachingCpuAllocator::kMaxCachedBytes);
  EXPECT_GT(a().cachedBytes(), 0u);
}

// LibTorch's tensors come from it once installed; a run's end gives its blocks back but for the
// newest it was allowed to keep (as many bytes as its result holds, at most kKeptBetweenRuns).
TEST_F(CachingCpuAllocatorTest, TensorsUseItAndReleaseAfterKeepsOnlyWhatTheRunAllows) {
  EXPECT_EQ(c10::GetCPUAllocator(), &a());
  {
    const CachingCpuAllocator::ReleaseAfter run;
    { const torch::Tensor t = torch::ones({1024, 1024}); }  // 4 MiB
    EXPECT_GE(a().cachedBytes(), 4 * kMiB);
  }
  EXPECT_EQ(a().cachedBytes(), 0u);  // nothing allowed: a run that threw, say
  {
    // A small result still keeps a short run's block or two (kKeptAtLeast).
    CachingCpuAllocator::ReleaseAfter run;
    { const torch::Tensor t = torch::ones({512, 1024}); }  // 2 MiB
    run.keepUpTo(1024);
  }
  EXPECT_EQ(a().cachedBytes(), 2 * kMiB);
  a().releaseCached();

  // Freed in order, so the last is the newest; the kept ones are the newest that fit.
  const std::size_t block = 16 * kMiB;
  const std::size_t count = CachingCpuAllocator::kKeptBetweenRuns / block + 3;
  const auto runFreeing = [&](std::size_t allowed, std::vector<void*>& order) {
    CachingCpuAllocator::ReleaseAfter run;
    std::vector<c10::DataPtr> blocks;
    for (std::size_t i = 0; i < count; ++i) blocks.push_back(a().allocate(block));
    order.clear();
    for (c10::DataPtr& b : blocks) {
      order.push_back(b.get());
      b.clear();
    }
    EXPECT_GE(a().cachedBytes(), count * block);
    run.keepUpTo(allowed);
  };
  std::vector<void*> order;
  runFreeing(3 * block + block / 2, order);  // a result of 3.5 blocks
  EXPECT_EQ(a().cachedBytes(), 3 * block);
  {
    // The next run's tensors of that size get exactly the three newest back.
    std::vector<c10::DataPtr> again;
    for (int i = 0; i < 3; ++i) again.push_back(a().allocate(block));
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_EQ(again[i].get(), order[count - 1 - i]) << "block " << i;
    EXPECT_EQ(a().cachedBytes(), 0u);
  }
  a().releaseCached();
  runFreeing(std::size_t{1} << 40, order);  // a huge result: the cap holds
  EXPECT_LE(a().cachedBytes(), CachingCpuAllocator::kKeptBetweenRuns);
  EXPECT_GT(a().cachedBytes(), CachingCpuAllocator::kKeptBetweenRuns - block);
}

}  // namespace
}  // namespace attnscope
