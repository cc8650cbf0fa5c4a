// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <algorithm>
#include <vector>

#include "attnscope/attention_result.h"
#include "attnscope/long_range.h"

namespace attnscope {

/// Query rows read at once: enough for the recomputation's products to run near the BLAS rate,
/// few enough that a 32,768-key block is 16 MB.
constexpr int kRowsPerBlock = 128;

/// Calls visit(q, row) for each real query row of one head, in order, a block at a time. False
/// when the group lacks the layer.
template <typename Visit>
inline bool forEachRow(const AttentionGroup& g, int layer, int item, int head, Visit&& visit) {
  if (!g.hasLayer(layer)) return false;
  const int nq =
      g.queryLengths.empty() ? g.queries() : g.queryLengths[static_cast<std::size_t>(item)];
  const int Tk = g.keys();
  std::vector<float> block(static_cast<std::size_t>(std::min(nq, kRowsPerBlock)) * Tk);
  for (int q0 = 0; q0 < nq; q0 += kRowsPerBlock) {
    const int q1 = std::min(nq, q0 + kRowsPerBlock);
    attentionRows(g, layer, item, head, q0, q1, block.data());
    for (int q = q0; q < q1; ++q) visit(q, block.data() + static_cast<std::size_t>(q - q0) * Tk);
  }
  return true;
}

}  // namespace attnscope
