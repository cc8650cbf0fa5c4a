// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/value_weighted_norms.h"

#include <algorithm>
#include <string>

#include "attnscope/error.h"
#include "attnscope/head_statistics.h"

namespace attnscope {

namespace {

void requireNorms(const AttentionGroup& group) {
  if (!group.contextTokens.empty())
    throw Error(ErrorKind::InvalidArgument, "value-weighted norms need self-attention; the '" +
                                                group.name + "' group attends to another sequence");
  const std::vector<int64_t> expected = {group.layers(), group.batch(), group.heads(),
                                         group.keys()};
  if (group.valueNorms.empty() || group.valueNorms.shape != expected)
    throw Error(
        ErrorKind::InvalidArgument,
        "value-weighted norms need the value norms of the run (RunRequest::keepValueNorms)");
  if (group.onDemand())
    throw Error(ErrorKind::InvalidArgument,
                "value-weighted norms need the stored attention; this run computes it on demand");
  if (!group.keptLayers.empty())
    throw Error(ErrorKind::InvalidArgument,
                "value-weighted norms need the attention of every layer; this run kept " +
                    std::to_string(group.keptLayers.size()) + " of " +
                    std::to_string(group.layers()));
}

}  // namespace

ValueWeightedNorms valueWeightedNorms(const AttentionGroup& group, int item) {
  requireNorms(group);
  if (item < 0 || item >= group.batch())
    throw Error(ErrorKind::InvalidArgument,
                "value-weighted norms: batch item " + std::to_string(item) +
                    " is out of range (the batch has " + std::to_string(group.batch()) + ")");
  ValueWeightedNorms r;
  r.layers = group.layers();
  r.heads = group.heads();
  if (r.layers == 0 || r.heads == 0) return r;
  const MatrixView shape = headView(group, 0, item, 0);
  const int n = std::min(shape.queries, shape.keys);
  r.tokens = n;
  r.values.assign(static_cast<std::size_t>(r.layers) * r.heads * n * n, 0.0);
  const std::size_t keys = static_cast<std::size_t>(group.keys());
  std::size_t out = 0;
  for (int l = 0; l < r.layers; ++l) {
    for (int h = 0; h < r.heads; ++h) {
      const MatrixView m = headView(group, l, item, h);
      // valueNorms[l, item, h, :]: ‖f_h(x_j)‖; the weight is a non-negative scalar, so
      // ‖α_ij f_h(x_j)‖ = α_ij ‖f_h(x_j)‖.
      const float* norms =
          group.valueNorms.data.data() +
          ((static_cast<std::size_t>(l) * group.batch() + item) * r.heads + h) * keys;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j, ++out)
          r.values[out] = static_cast<double>(m.at(i, j)) * norms[j];
    }
  }
  return r;
}

AttentionGroup valueNormGroup(const AttentionGroup& group) {
  requireNorms(group);
  AttentionGroup g;
  g.name = "value_norm";
  g.distribution = false;
  g.kvHeads = group.kvHeads;
  g.tokens = group.tokens;
  g.queryLengths = group.queryLengths;
  g.keyLengths = group.keyLengths;
  g.attention = group.attention;
  const std::size_t keys = static_cast<std::size_t>(group.keys());
  const std::size_t rows = static_cast<std::size_t>(group.queries());
  float* a = g.attention.data.data();
  // attention and valueNorms share [layers, batch, heads]; each row is scaled key by key.
  for (std::size_t head = 0; head < group.valueNorms.data.size() / std::max<std::size_t>(1, keys);
       ++head) {
    const float* norms = group.valueNorms.data.data() + head * keys;
    for (std::size_t i = 0; i < rows; ++i, a += keys)
      for (std::size_t j = 0; j < keys; ++j) a[j] *= norms[j];
  }
  return g;
}

}  // namespace attnscope
