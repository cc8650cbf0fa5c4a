// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

/// A self-attention group of `layers` × items × `heads` heads stored over `stored` positions.
/// Item b has the token ids ids[b] (its real length); cell(l, b, h, q, k) fills the real
/// [q, k] part and padding stays 0, as a model's result has it.
inline AttentionGroup syntheticGroup(int layers, int heads, int stored,
                                     const std::vector<std::vector<int64_t>>& ids,
                                     const std::function<float(int, int, int, int, int)>& cell) {
  const int batch = static_cast<int>(ids.size());
  AttentionGroup g;
  g.name = "self";
  g.attention = FloatTensor({layers, batch, heads, stored, stored});
  for (const std::vector<int64_t>& item : ids) {
    g.queryLengths.push_back(static_cast<int>(item.size()));
    g.keyLengths.push_back(static_cast<int>(item.size()));
    g.tokens.emplace_back();
    for (int64_t id : item) {
      Token t;
      t.id = id;
      g.tokens.back().push_back(t);
    }
  }
  std::size_t i = 0;
  for (int l = 0; l < layers; ++l)
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int q = 0; q < stored; ++q)
          for (int k = 0; k < stored; ++k, ++i) {
            const int n = g.queryLengths[static_cast<std::size_t>(b)];
            if (q < n && k < n) g.attention.data[i] = cell(l, b, h, q, k);
          }
  return g;
}

/// Token ids 0 .. n-1.
inline std::vector<int64_t> positionIds(int n) {
  std::vector<int64_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(i);
  return ids;
}

}  // namespace attnscope
