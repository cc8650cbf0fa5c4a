// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/layer_kv_cache.h"

#include <algorithm>

#include "attnscope/error.h"

namespace attnscope {
namespace {

/// t's storage grown to `capacity` positions along dim -2, its first `length` positions kept.
torch::Tensor grown(const torch::Tensor& t, const torch::Tensor& like, int64_t length,
                    int64_t capacity) {
  std::vector<int64_t> shape = like.sizes().vec();
  shape[shape.size() - 2] = capacity;
  torch::Tensor g = torch::empty(shape, like.options());
  if (length > 0) g.narrow(-2, 0, length).copy_(t.narrow(-2, 0, length));
  return g;
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> LayerKvCache::append(const torch::Tensor& k,
                                                             const torch::Tensor& v, int head) {
  const auto index = static_cast<std::size_t>(head + 1);
  if (m_slots.size() <= index) m_slots.resize(index + 1);
  Slot& s = m_slots[index];
  const int64_t n = k.size(-2), need = s.length + n;
  if (s.k.defined() && (k.sizes().slice(0, k.dim() - 2) != s.k.sizes().slice(0, s.k.dim() - 2) ||
                        k.size(-1) != s.k.size(-1) || v.size(-1) != s.v.size(-1)))
    throw Error(ErrorKind::Internal, "a layer's keys changed shape between generation steps");
  if (!s.k.defined() || need > s.k.size(-2)) {
    const int64_t capacity =
        std::max({need, m_reserve, s.k.defined() ? 2 * s.k.size(-2) : int64_t{0}});
    s.k = grown(s.k, k, s.length, capacity);
    s.v = grown(s.v, v, s.length, capacity);
  }
  s.k.narrow(-2, s.length, n).copy_(k);
  s.v.narrow(-2, s.length, n).copy_(v);
  s.length = need;
  return {s.k.narrow(-2, 0, need), s.v.narrow(-2, 0, need)};
}

std::pair<torch::Tensor, torch::Tensor> LayerKvCache::stored(int head) const {
  const auto index = static_cast<std::size_t>(head + 1);
  if (index >= m_slots.size() || !m_slots[index].k.defined()) return {};
  const Slot& s = m_slots[index];
  return {s.k.narrow(-2, 0, s.length), s.v.narrow(-2, 0, s.length)};
}

int64_t LayerKvCache::length() const {
  for (const Slot& s : m_slots)
    if (s.k.defined()) return s.length;
  return 0;
}

uint64_t LayerKvCache::bytes() const {
  uint64_t b = 0;
  for (const Slot& s : m_slots)
    if (s.k.defined())
      b += static_cast<uint64_t>(s.k.numel() * s.k.element_size() +
                                 s.v.numel() * s.v.element_size());
  return b;
}

uint64_t KvCache::bytes() const {
  uint64_t b = 0;
  for (const LayerKvCache& c : m_layers) b += c.bytes();
  return b;
}

}  // namespace attnscope
