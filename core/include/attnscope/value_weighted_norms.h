// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

/// Value-weighted attention norms (Kobayashi et al., 2020): ‖α_ij · f_h(x_j)‖ with
/// f_h(x) = (x W_V^h + b_V^h) W_O^h, how much key j really moves query i's output through head h.
/// A head can attend strongly to a key whose transformed value is tiny; this shows that.
struct ValueWeightedNorms {
  int layers = 0;
  int heads = 0;
  int tokens = 0;              // T: the item's real tokens
  std::vector<double> values;  // [layers, heads, T, T] row-major (query, key)

  double at(int layer, int head, int query, int key) const {
    return values[((static_cast<std::size_t>(layer) * heads + head) * tokens + query) * tokens +
                  key];
  }
};

/// The norms of batch item `item` from the group's attention and valueNorms (a run with
/// RunRequest::keepValueNorms). Throws Error(InvalidArgument) when the group has no valueNorms, for
/// cross-attention or for an item out of range.
ValueWeightedNorms valueWeightedNorms(const AttentionGroup& group, int item = 0);

/// The norms of every batch item as a group the views show like attention: named "value_norm",
/// `distribution` false, attention[l, b, h, i, j] = α_ij ‖f_h(x_j)‖ (padding 0), the tokens and
/// lengths of `group`. Throws like valueWeightedNorms.
AttentionGroup valueNormGroup(const AttentionGroup& group);

}  // namespace attnscope
