// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

/// Per-head scores of the circuits of Olsson et al. (2022), for one batch item. For each query t
/// whose token id occurred before, s is its most recent earlier position; t counts when
/// s + 1 < t (so that s + 1 is not simply the previous token).
struct InductionScores {
  int layers = 0;
  int heads = 0;
  int repeatedPositions = 0;           // how many queries t qualified for induction / duplicate
  std::vector<double> induction;       // [layers, heads]: mean A[t, s+1] over those t
  std::vector<double> duplicateToken;  // [layers, heads]: mean A[t, s] over the same t
  std::vector<double> previousToken;   // [layers, heads]: mean A[t, t-1] over every t >= 1

  double inductionAt(int layer, int head) const { return induction[index(layer, head)]; }
  double duplicateAt(int layer, int head) const { return duplicateToken[index(layer, head)]; }
  double previousAt(int layer, int head) const { return previousToken[index(layer, head)]; }

 private:
  std::size_t index(int layer, int head) const {
    return static_cast<std::size_t>(layer) * heads + head;
  }
};

/// The scores of every head on batch item `item`, from its token ids. Scores without a
/// qualifying query are 0 (repeatedPositions 0: no token repeats with a gap). Throws
/// Error(InvalidArgument) for a cross-attention group or an item out of range.
InductionScores inductionScores(const AttentionGroup& group, int item = 0);

}  // namespace attnscope
