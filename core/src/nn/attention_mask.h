// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace attnscope {

/// Which keys each query may see.
struct MaskOptions {
  std::vector<int> keyLengths;  // [B] real keys per item; keys at and past it are padding
  int64_t queries = 0;          // Tq
  int64_t keys = 0;             // Tk
  bool causal = false;          // query i sees keys j <= i
  int64_t slidingWindow = 0;    // > 0: query i sees only keys j > i - slidingWindow (Mistral)
  int64_t windowRadius = -1;    // >= 0: query i sees only keys |i - j| <= windowRadius, on both
                                // sides (ModernBERT's local layers: local_attention / 2)
  int64_t queryOffset = 0;      // query i sits at position queryOffset + i (generation with a
                                // key/value cache: Tq new queries after Tk - Tq cached keys);
                                // causality and the window count from there
};

/// An additive attention mask: 0 where a query may look, -inf where it may not. Either a tensor
/// given as it is, or (what buildMask makes) one visible run of keys per query row, kept as each
/// row's first and one-past-last key: O(B·Tq) where the tensor is O(B·Tq·Tk), 4.3 GB at
/// T = 32,768. The blocked kernel and attention on demand read the runs; a path that adds the
/// mask to whole scores (the step-by-step one, another device) asks for dense(), which is made
/// once and shared by every copy (the layers of a run). Copies are cheap handles.
class AttentionMask {
 public:
  /// Visible keys [first, end) of each query row: [items, Tq] each, items 1 when every batch
  /// item's rows are the same. Never an empty run (a row that would see nothing keeps key 0).
  struct Ranges {
    int64_t batch = 0, items = 0, queries = 0, keys = 0;
    std::vector<int32_t> first, end;
  };

  AttentionMask() = default;  // nothing masked
  /// A mask tensor as it is, broadcastable to [..., Tq, Tk]; undefined: nothing masked.
  AttentionMask(torch::Tensor additive);  // NOLINT(google-explicit-constructor): a mask is a tensor
  /// Runs of visible keys, whose tensor would be [batch, 1, Tq, Tk] float on `device`.
  AttentionMask(Ranges ranges, const torch::Device& device);

  bool defined() const { return m_dense.defined() || m_state != nullptr; }
  /// The additive tensor: the one given, or [batch, 1, Tq, Tk] made from the runs on first use.
  const torch::Tensor& dense() const;
  /// The runs, or null for a mask given as a tensor.
  const Ranges* ranges() const;
  /// The runs, shared with every copy of this mask (attention on demand keeps them past the run).
  std::shared_ptr<const Ranges> sharedRanges() const;
  /// The same mask with its tensor (if made or given) on `device`: the runs stay as they are.
  AttentionMask to(const torch::Device& device) const;
  /// How many tensors dense() has made from runs in this process: a path that should read the
  /// runs (the blocked kernel, attention on demand) is checked by this not moving.
  static uint64_t tensorsMade();

 private:
  struct State;
  torch::Tensor m_dense;
  std::shared_ptr<State> m_state;
};

/// The mask [B, 1, Tq, Tk] as runs of visible keys: padding, future keys, keys outside the
/// window, one- or two-sided. Undefined when nothing is masked. A row that would see no key
/// keeps key 0 (softmax would give NaN; such rows belong to padded queries, which the caller
/// zeroes afterwards).
AttentionMask buildMask(const MaskOptions& options);

/// The causal mask of one unpadded sequence of T tokens: [1, 1, T, T] (training, evaluation).
torch::Tensor causalMask(int64_t T);

}  // namespace attnscope
