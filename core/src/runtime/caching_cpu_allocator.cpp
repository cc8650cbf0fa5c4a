// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/caching_cpu_allocator.h"

#include <sys/mman.h>

#include <c10/core/CPUAllocator.h>

#include <new>
#include <utility>
#include <vector>

namespace attnscope {

namespace {

// Whole 64 KiB granules: a text one token longer needs a few KB more per activation, which the
// same block then still holds.
constexpr std::size_t kGranule = std::size_t{64} << 10;

std::size_t roundUp(std::size_t bytes) { return (bytes + kGranule - 1) / kGranule * kGranule; }

}  // namespace

CachingCpuAllocator& CachingCpuAllocator::instance() {
  // Never destroyed: tensors may be freed by static destructors after main.
  static CachingCpuAllocator* a = new CachingCpuAllocator();
  return *a;
}

c10::DataPtr CachingCpuAllocator::allocate(std::size_t bytes) const {
  // Small ones keep the default allocator's own deleter (raw_deallocate of one comes to
  // release(), which hands it back).
  if (bytes < kMinBytes) return c10::GetDefaultCPUAllocator()->allocate(bytes);
  const std::size_t capacity = roundUp(bytes);
  void* data = nullptr;
  std::size_t got = 0;
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    // Of the free blocks that hold it and are at most a quarter too big (a bigger one would pin
    // memory a smaller tensor does not use), the one freed last: its pages are resident and warm.
    // The first fit took the oldest instead, which for a model just loaded is one of the blocks
    // its modules' placeholder parameters had (mapped, never touched, freed when the checkpoint's
    // tensors replaced them): every layer of a GPT-2 run then touched a fresh qkv block, and the
    // CLI's peak held ~100 MiB of activations more than one layer's.
    auto it = m_free.end();
    for (auto at = m_free.lower_bound(capacity);
         at != m_free.end() && at->first <= capacity + capacity / 4; ++at)
      if (it == m_free.end() || at->second.freedAt > it->second.freedAt) it = at;
    if (it != m_free.end()) {
      data = it->second.data;
      got = it->first;
      m_cachedBytes -= got;
      m_free.erase(it);
      m_live.emplace(data, got);
      m_liveBytes += got;
    }
  }
  if (!data) {
    void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data = p;
    const std::lock_guard<std::mutex> lock(m_mutex);
    m_live.emplace(data, capacity);
    m_liveBytes += capacity;
  }
  return c10::DataPtr(data, data, &release, c10::Device(c10::DeviceType::CPU));
}

void CachingCpuAllocator::release(void* data) {
  if (data && !instance().keep(data)) c10::GetDefaultCPUAllocator()->raw_deleter()(data);
}

bool CachingCpuAllocator::keep(void* data) const {
  std::vector<std::pair<void*, std::size_t>> evicted;
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    const auto live = m_live.find(data);
    if (live == m_live.end()) return false;
    const std::size_t capacity = live->second;
    m_live.erase(live);
    m_liveBytes -= capacity;
    m_free.emplace(capacity, Free{data, ++m_clock});
    m_cachedBytes += capacity;
    evicted = evictLocked(kMaxCachedBytes);
  }
  for (const auto& [p, capacity] : evicted) ::munmap(p, capacity);
  return true;
}

std::vector<std::pair<void*, std::size_t>> CachingCpuAllocator::evictLocked(
    std::size_t keep) const {
  std::vector<std::pair<void*, std::size_t>> evicted;
  // The longest unused go first (a linear scan: a few dozen blocks at most).
  while (m_cachedBytes > keep) {
    auto oldest = m_free.begin();
    for (auto it = m_free.begin(); it != m_free.end(); ++it)
      if (it->second.freedAt < oldest->second.freedAt) oldest = it;
    m_cachedBytes -= oldest->first;
    evicted.emplace_back(oldest->second.data, oldest->first);
    m_free.erase(oldest);
  }
  return evicted;
}

std::size_t CachingCpuAllocator::cachedBytes() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_cachedBytes;
}

std::size_t CachingCpuAllocator::liveBytes() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_liveBytes;
}

void CachingCpuAllocator::trimCached(std::size_t keep) const {
  std::vector<std::pair<void*, std::size_t>> evicted;
  {
    const std::lock_guard<std::mutex> lock(m_mutex);
    evicted = evictLocked(keep);
  }
  for (const auto& [p, capacity] : evicted) ::munmap(p, capacity);
}

}  // namespace attnscope
