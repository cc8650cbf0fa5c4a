// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope {

/// LibTorch's CPU allocator for this process (installed by ensureRuntime): tensors of 1 MiB and
/// more come from mapped blocks that are kept for the next tensor of about the same size instead
/// of going back to glibc. Smaller ones go to LibTorch's default allocator.
///
/// Why: a forward allocates the same few activation sizes in every layer (GPT-2 at T = 1000:
/// 3, 9 and 12 MB). From glibc's heap they fragmented it: after one `attnscope-cli run` the heap
/// had grown to 559 MB, 316 MB of it resident, for 50 MB in use. Kept here, a layer's activations
/// reuse the previous layer's blocks, so what stays resident is about one layer's working set.
/// (Measured: `attnscope-cli run`, GPT-2 small at T = 1000, peak RSS 1506 → 1393 MB; SmolLM-135M
/// shapes at T = 1024, 2197 → 1963 MB.)
///
/// At most `kMaxCachedBytes` of free blocks are kept; past that the longest unused are unmapped.
/// When a run ends (ReleaseAfter) the cache is trimmed to what the run says it may keep: as many
/// bytes as its result holds, but at least `kKeptAtLeast` (a short run's few blocks of a MiB or
/// two: the toy layer's qkv at T = 128 is 1.2 MB against 0.8 MB of attention) and at most
/// `kKeptBetweenRuns`, the most recently freed blocks first.
/// The next edit's run takes the same activation sizes, and a block given back to the kernel
/// comes back as fresh pages that fault and are zeroed one by one (a repeat of the toy layer at
/// T = 4096 faulted in ~96 MB a run). Tying it to the result keeps what is held for speed a
/// fraction of what the run costs anyway: a short run of an F16 model keeps none of its widened
/// weights.
class CachingCpuAllocator final : public c10::Allocator {
 public:
  static constexpr std::size_t kMinBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;
  static constexpr std::size_t kKeptBetweenRuns = std::size_t{128} << 20;
  static constexpr std::size_t kKeptAtLeast = std::size_t{4} << 20;

  c10::DataPtr allocate(std::size_t bytes) const override;
  /// raw_allocate / raw_deallocate (LibTorch's serialisation uses them): frees either kind.
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  /// Free bytes held for reuse, and bytes handed out in blocks of this allocator.
  std::size_t cachedBytes() const;
  std::size_t liveBytes() const;

  /// Unmaps every cached block.
  void releaseCached() const { trimCached(0); }
  /// Unmaps the longest unused cached blocks until at most `keep` bytes are cached.
  void trimCached(std::size_t keep) const;

  /// Trims the cache when it goes out of scope (the end of a run): to nothing, unless the run
  /// called keepUpTo.
  class ReleaseAfter {
   public:
    ReleaseAfter() = default;
    ReleaseAfter(const ReleaseAfter&) = delete;
    ReleaseAfter& operator=(const ReleaseAfter&) = delete;
    ~ReleaseAfter() { instance().trimCached(m_keep); }
    /// Keep up to `bytes` (at least kKeptAtLeast, at most kKeptBetweenRuns) of the newest blocks
    /// for the next run.
    void keepUpTo(std::size_t bytes) {
      m_keep = bytes < kKeptAtLeast       ? kKeptAtLeast
               : bytes < kKeptBetweenRuns ? bytes
                                          : kKeptBetweenRuns;
    }

   private:
    std::size_t m_keep = 0;
  };

  /// The process's instance.
  static CachingCpuAllocator& instance();

 private:
  struct Free {
    void* data;
    unsigned long long freedAt;
  };
  /// The deleter of every pointer this allocator hands out: a block goes back to the cache,
  /// anything else to LibTorch's default allocator.
  static void release(void* data);
  /// Takes a block of this allocator back into the cache; false for any other pointer.
  bool keep(void* data) const;
  /// Takes the longest unused blocks out of the cache until at most `keep` bytes are cached;
  /// the caller unmaps them after unlocking. m_mutex held.
  std::vector<std::pair<void*, std::size_t>> evictLocked(std::size_t keep) const;

  mutable std::mutex m_mutex;
  mutable std::unordered_map<void*, std::size_t> m_live;  // handed out: data -> capacity
  mutable std::multimap<std::size_t, Free> m_free;        // kept: capacity -> block
  mutable std::size_t m_cachedBytes = 0, m_liveBytes = 0;
  mutable unsigned long long m_clock = 0;
};

}  // namespace attnscope
