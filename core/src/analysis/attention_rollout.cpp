// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/attention_rollout.h"

#include <algorithm>
#include <string>

#include "analysis/head_rows.h"
#include "attnscope/error.h"

namespace attnscope {
namespace {

// Â = ½·mean_h(A) + ½·I over the real tokens, rows renormalised: [T, T] row-major. Read a block
// of rows at a time, from the stored attention or recomputed on demand.
std::vector<double> residualAttention(const AttentionGroup& group, int layer, int item, int n) {
  std::vector<double> a(static_cast<std::size_t>(n) * n, 0.0);
  const int heads = group.heads();
  for (int h = 0; h < heads; ++h)
    forEachRow(group, layer, item, h, [&](int q, const float* row) {
      if (q >= n) return;
      double* out = a.data() + static_cast<std::size_t>(q) * n;
      for (int k = 0; k < n; ++k) out[k] += row[k];
    });
  for (int q = 0; q < n; ++q) {
    double* row = a.data() + static_cast<std::size_t>(q) * n;
    double sum = 0;
    for (int k = 0; k < n; ++k) {
      row[k] = 0.5 * row[k] / heads + (q == k ? 0.5 : 0.0);
      sum += row[k];
    }
    // sum >= 0.5 always (the identity half), so the division is safe.
    for (int k = 0; k < n; ++k) row[k] /= sum;
  }
  return a;
}

}  // namespace

AttentionRollout attentionRollout(const AttentionGroup& group, int item, int upToLayer) {
  if (!group.contextTokens.empty())
    throw Error(ErrorKind::InvalidArgument, "rollout needs self-attention; the '" + group.name +
                                                "' group attends to another sequence");
  if (group.layers() <= 0 || group.heads() <= 0)
    throw Error(ErrorKind::InvalidArgument, "rollout: the result holds no attention");
  if (item < 0 || item >= group.batch())
    throw Error(ErrorKind::InvalidArgument, "rollout: batch item " + std::to_string(item) +
                                                " is out of range (the batch has " +
                                                std::to_string(group.batch()) + ")");
  const int last = upToLayer < 0 ? group.layers() - 1 : upToLayer;
  if (last >= group.layers())
    throw Error(ErrorKind::InvalidArgument, "rollout: layer " + std::to_string(upToLayer) +
                                                " is out of range (the model has " +
                                                std::to_string(group.layers()) + " layers, 0.." +
                                                std::to_string(group.layers() - 1) + ")");
  for (int l = 0; l <= last; ++l) {
    if (!group.hasLayer(l))
      throw Error(ErrorKind::InvalidArgument,
                  "rollout up to layer " + std::to_string(last) +
                      " needs the attention of every layer below it; this run did not keep layer " +
                      std::to_string(l));
  }
  const int queries = group.queryLengths.empty()
                          ? group.queries()
                          : group.queryLengths[static_cast<std::size_t>(item)];
  const int keys =
      group.keyLengths.empty() ? group.keys() : group.keyLengths[static_cast<std::size_t>(item)];
  const int n = std::min(queries, keys);

  AttentionRollout r;
  r.tokens = n;
  r.layers = last + 1;
  r.values = residualAttention(group, 0, item, n);
  // R_l = Â_l · R_{l-1}: later layers multiply on the left.
  std::vector<double> next(r.values.size());
  for (int l = 1; l <= last; ++l) {
    const std::vector<double> a = residualAttention(group, l, item, n);
    // Row q of the product accumulates a_qm · R's row m, m ascending: each cell sums over m in
    // the same order as a dot product would, reading R row by row (a 4,096-token rollout reads
    // 128 MB columns otherwise).
    for (int q = 0; q < n; ++q) {
      double* out = next.data() + static_cast<std::size_t>(q) * n;
      std::fill(out, out + n, 0.0);
      for (int m = 0; m < n; ++m) {
        const double w = a[static_cast<std::size_t>(q) * n + m];
        if (w == 0) continue;
        const double* in = r.values.data() + static_cast<std::size_t>(m) * n;
        for (int k = 0; k < n; ++k) out[k] += w * in[k];
      }
    }
    r.values.swap(next);
  }
  return r;
}

}  // namespace attnscope
