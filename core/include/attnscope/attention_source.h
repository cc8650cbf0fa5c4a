// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cstdint>

namespace attnscope {

/// Any head's attention, computed exactly when asked instead of stored
/// (RunRequest::attentionOnDemand). A run keeps, per layer, what the weights are recomputed from:
/// the queries and keys its q·kᵀ read, the score's scale, cap, bias and mask, and each query row's
/// softmax normaliser, so a weight is exp(score − log Σ exp(scores of the row)): O(L·H·T·d) memory
/// instead of the stored O(L·H·T²). A Llama-3.2-1B at 8,192 tokens keeps about 2 GB where its
/// attention would need 137 GB.
///
/// Calls may come from several threads at once (it is read-only after the run).
class AttentionSource {
 public:
  virtual ~AttentionSource() = default;

  /// [kept layers, batch, heads, queries, keys]: the shape the stored attention would have.
  virtual std::array<int64_t, 5> shape() const = 0;

  /// The weights of query rows [q0, q1) over keys [k0, k1) of one head of a kept layer (its index
  /// in the kept layers), row-major into out ((q1 − q0)·(k1 − k0) floats). Masked cells, padded
  /// keys and padded query rows are 0, as in the stored attention. Throws Error(InvalidArgument)
  /// for a range outside the shape.
  virtual void tile(int slot, int item, int head, int q0, int q1, int k0, int k1,
                    float* out) const = 0;

  /// The bytes it holds (shared tensors, such as one mask for every layer, counted once).
  virtual uint64_t bytes() const = 0;
};

}  // namespace attnscope
