// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/attention_rollout.h"

#include <algorithm>
#include <string>

#include "attnscope/error.h"
#include "attnscope/head_statistics.h"

namespace attnscope {
namespace {

// Â = ½·mean_h(A) + ½·I over the real tokens, rows renormalised: [T, T] row-major.
std::vector<double> residualAttention(const AttentionGroup& group, int layer, int item, int n) {
  std::vector<double> a(static_cast<std::size_t>(n) * n, 0.0);
  const int heads = group.heads();
  for (int h = 0; h < heads; ++h) {
    const MatrixView m = headView(group, layer, item, h);
    for (int q = 0; q < n; ++q)
      for (int k = 0; k < n; ++k) a[static_cast<std::size_t>(q) * n + k] += m.at(q, k);
  }
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
  const MatrixView shape = headView(group, 0, item, 0);
  const int n = std::min(shape.queries, shape.keys);

  AttentionRollout r;
  r.tokens = n;
  r.layers = last + 1;
  r.values = residualAttention(group, 0, item, n);
  // R_l = Â_l · R_{l-1}: later layers multiply on the left.
  std::vector<double> next(r.values.size());
  for (int l = 1; l <= last; ++l) {
    const std::vector<double> a = residualAttention(group, l, item, n);
    for (int q = 0; q < n; ++q) {
      for (int k = 0; k < n; ++k) {
        double sum = 0;
        for (int m = 0; m < n; ++m)
          sum += a[static_cast<std::size_t>(q) * n + m] *
                 r.values[static_cast<std::size_t>(m) * n + k];
        next[static_cast<std::size_t>(q) * n + k] = sum;
      }
    }
    r.values.swap(next);
  }
  return r;
}

}  // namespace attnscope
