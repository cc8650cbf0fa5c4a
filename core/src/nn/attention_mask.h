// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

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

/// Additive mask [B, 1, Tq, Tk]: 0 where a query may look, -inf where it may not (padding, future
/// keys, keys outside the window, one- or two-sided). Undefined when nothing is masked. A row that
/// would be all -inf keeps key 0 (softmax would give NaN; such rows belong to padded queries, which
/// the caller zeroes afterwards).
torch::Tensor buildMask(const MaskOptions& options);

/// The causal mask of one unpadded sequence of T tokens: [1, 1, T, T] (training, evaluation).
torch::Tensor causalMask(int64_t T);

}  // namespace attnscope
