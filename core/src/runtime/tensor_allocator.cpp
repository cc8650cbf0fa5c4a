// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/tensor_allocator.h"

#include <array>
#include <mutex>
#include <utility>
#include <vector>

namespace attnscope::detail {

// Transparent huge pages (madvise(MADV_HUGEPAGE) on 2 MiB-aligned blocks) were tried for the big
// results and measured worse on this project's machines: attnscope-cli on GPT-2 at T = 1000 spent
// 0.8 to 3.2 s of system time with them, 0.64 s without (THP "defrag" compacts on fault). So
// blocks are plain operator new; glibc maps the big ones (ensureRuntime's mmap threshold).
//
// The big ones are recycled. A fresh mapping page-faults on every 4 KiB page it is written
// through: the toy layer's 805 MB of attention at T = 4096 spent ~0.5 s of its ~1.4 s run in
// the kernel taking those faults and zeroing the pages. A run's attention and scores are freed
// when the next result replaces them (the window) or the next iteration starts (make bench), and
// the next run asks for about the same size again, so the last two big blocks freed stay mapped
// for it. Big blocks are reserved 1/8 larger than asked: typing a character makes T one longer,
// and the slack is address space only until written (it costs no memory).
//
// This never raises the peak: a big request that no kept block fits gives every kept block back
// to the OS first. While nothing runs, what is kept is what the last result held.
namespace {

// The size from which glibc maps blocks (ensureRuntime's M_MMAP_THRESHOLD): smaller ones come
// from the heap, which keeps its pages.
constexpr std::size_t kRecycledMin = std::size_t{32} << 20;

struct Block {
  void* p = nullptr;
  std::size_t capacity = 0;
};

std::mutex g_mutex;
std::array<Block, 2> g_kept;  // freed, newest first; guarded by g_mutex
std::vector<Block> g_live;    // handed out; guarded by g_mutex

// A kept block serves requests from 60 % of its capacity up, which bounds what a much smaller
// request pins.
bool fits(const Block& b, std::size_t bytes) {
  return b.p && b.capacity >= bytes && bytes >= b.capacity / 5 * 3;
}

}  // namespace

void* allocateTensorBytes(std::size_t bytes) {
  if (bytes < kRecycledMin) return ::operator new(bytes);
  std::array<Block, 2> release{};
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    for (Block& b : g_kept) {
      if (fits(b, bytes)) {
        g_live.push_back(b);
        const Block taken = std::exchange(b, Block());
        return taken.p;
      }
    }
    release = std::exchange(g_kept, {});
  }
  for (const Block& b : release) ::operator delete(b.p);
  const std::size_t capacity = bytes + bytes / 8;
  void* p = ::operator new(capacity);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_live.push_back({p, capacity});
  return p;
}

void freeTensorBytes(void* p, std::size_t bytes) noexcept {
  if (bytes < kRecycledMin) return ::operator delete(p);
  Block oldest;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    Block freed{p, bytes};
    for (auto it = g_live.begin(); it != g_live.end(); ++it) {
      if (it->p == p) {
        freed = *it;
        g_live.erase(it);
        break;
      }
    }
    oldest = g_kept[1];
    g_kept[1] = g_kept[0];
    g_kept[0] = freed;
  }
  ::operator delete(oldest.p);
}

}  // namespace attnscope::detail
