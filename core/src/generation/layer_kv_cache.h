// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <utility>
#include <vector>

namespace attnscope {

/// One layer's keys and values of every position generated so far, as scaledDotProduct saw them
/// (after rotary, grouped-query heads already repeated to one per query head). scaledDotProduct
/// appends each call's keys and values and attends over all of them, so every family that
/// attends through it gets a cache with no family code (AttentionBuffers::kvCache). The per-head
/// modules (the tiny GPT) call it once per head: each head has its own slot.
/// Storage grows by doubling along the position axis (or to reserve()'s size at once), so a step
/// copies one position, not the whole cache.
class LayerKvCache final {
 public:
  /// Sizes the first allocation for this many positions (a hint: more still fit).
  void reserve(int64_t positions) { m_reserve = positions; }
  /// k, v: [..., Tnew, hd] this call's keys and values; head: scaledDotProduct's SdpaOptions::head
  /// (-1: all heads at once). -> the keys and values of every position so far, [..., T, hd] each
  /// (views of the cache: the cached positions followed by these).
  std::pair<torch::Tensor, torch::Tensor> append(const torch::Tensor& k, const torch::Tensor& v,
                                                 int head);
  /// The keys and values cached for `head` (as append() returns them), without adding any:
  /// cross-attention stores the encoder's projected output once and reads it back every step.
  /// Undefined tensors when that slot holds nothing.
  std::pair<torch::Tensor, torch::Tensor> stored(int head) const;
  /// Positions cached (in the first slot used).
  int64_t length() const;
  /// Bytes held (capacity, not length).
  uint64_t bytes() const;

 private:
  struct Slot {
    torch::Tensor k, v;  // [..., capacity, hd]
    int64_t length = 0;
  };
  std::vector<Slot> m_slots;  // indexed by head + 1
  int64_t m_reserve = 0;
};

/// The key/value caches of a stack's layers (see LayerKvCache).
class KvCache final {
 public:
  explicit KvCache(int64_t layers) : m_layers(static_cast<std::size_t>(layers)) {}
  LayerKvCache& layer(int64_t l) { return m_layers.at(static_cast<std::size_t>(l)); }
  void reserve(int64_t positions) {
    for (LayerKvCache& c : m_layers) c.reserve(positions);
  }
  /// Positions cached (layer 0's).
  int64_t length() const { return m_layers.empty() ? 0 : m_layers.front().length(); }
  uint64_t bytes() const;

 private:
  std::vector<LayerKvCache> m_layers;
};

}  // namespace attnscope
