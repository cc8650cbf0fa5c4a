// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

/// Attention rollout (Abnar & Zuidema, 2020): how much each output position draws on each input
/// token once attention is composed across layers. Per layer Â = ½·(mean over heads of A) + ½·I
/// with rows renormalised (the ½·I stands for the residual connection); rollout = Â_last ⋯ Â_0.
struct AttentionRollout {
  int tokens = 0;              // T: the item's real (non-padding) tokens
  int layers = 0;              // how many layers were composed (0 .. upToLayer)
  std::vector<double> values;  // [T, T] row-major: row = output position, column = input token;
                               // each row sums to 1

  double at(int query, int key) const {
    return values[static_cast<std::size_t>(query) * tokens + key];
  }
};

/// Rollout of batch item `item` over layers 0 .. upToLayer (inclusive; -1: every layer).
/// Self-attention only: queries and keys must be the same tokens. Throws Error(InvalidArgument)
/// for a cross-attention group, an item or a layer out of range, or an empty group.
AttentionRollout attentionRollout(const AttentionGroup& group, int item = 0, int upToLayer = -1);

}  // namespace attnscope
