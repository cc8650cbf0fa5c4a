// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace attnscope {

/// float32 copies of one model's F16/BF16 weights, kept across runs within a byte budget.
///
/// Why: the layers compute in float32, and a compact weight is widened where it is used
/// (computeWeight). Widened afresh on every run, a Llama-3.2-1B-shaped BF16 model re-converted and
/// page-faulted 2.3 GB of weights on every keystroke: 10 s of a 14-token forward whose arithmetic
/// takes ~0.35 s. Kept, a later run reads the float32 copies. Copies are made on first use, in
/// layer order, until the budget is spent; the weights past it are widened per use as before,
/// so a model larger than the budget still runs, with its first layers fast.
///
/// The copies are bit-identical to `w.to(torch::kFloat)`. Weights that need a gradient (a forward
/// with gradients through the weights) are never served from here. Thread-safe.
class WidenedWeights final {
 public:
  WidenedWeights() = default;
  ~WidenedWeights();
  WidenedWeights(const WidenedWeights&) = delete;
  WidenedWeights& operator=(const WidenedWeights&) = delete;

  /// w as float32: the kept copy, or a new one (kept while `budget` bytes allow).
  torch::Tensor widen(const torch::Tensor& w, uint64_t budget);
  /// The kept copy of w (made now when `budget` bytes allow), or an undefined tensor when it is
  /// not kept: the caller widens the parts it needs itself.
  torch::Tensor kept(const torch::Tensor& w, uint64_t budget);
  /// Bytes of float32 copies held.
  uint64_t bytes() const;
  void clear();

  /// Bytes held by every WidenedWeights of the process (tests: memory returned on close).
  static uint64_t bytesInProcess();

  /// For one run on this thread: computeWeight widens through `cache` within `budget` bytes.
  /// A null cache (or budget 0) widens per use. Scopes nest; the previous one is restored.
  class Scope final {
   public:
    Scope(WidenedWeights* cache, uint64_t budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    WidenedWeights* m_previous;
    uint64_t m_previousBudget;
  };
  /// The cache of this thread's current Scope, or null; and its budget.
  static WidenedWeights* active();
  static uint64_t activeBudget();

 private:
  // A weight is named by where its elements are, so that the same slice of a fused weight, made
  // anew on every run, finds its copy: (data pointer, sizes, strides, dtype).
  using Key = std::tuple<const void*, std::vector<int64_t>, std::vector<int64_t>, int>;
  mutable std::mutex m_mutex;
  std::map<Key, torch::Tensor> m_copies;
  uint64_t m_bytes = 0;
};

}  // namespace attnscope
