// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <vector>

#include "attnscope/attention_result.h"
#include "attnscope/head_statistics.h"

namespace attnscope {

/// What one head does over a long input (issue 33), from its real rows and keys, read a block of
/// query rows at a time: from the stored attention, or recomputed on demand (AttentionGroup::
/// source) without ever holding more than one block.
struct LongRangeProfile {
  HeadStatistics statistics;  // the same numbers headStatistics gives for the stored matrix
  /// Mean over queries of the weight on the first `sinkTokens` keys: an attention sink.
  double sinkShare = 0;
  /// Mean over queries of the weight at each distance bucket, bucket b holding the keys at
  /// |q − k| in [2^b − 1, 2^(b+1) − 1) (b = 0: the query itself; 1: one or two away; 2: three to
  /// six; ...), so that the entries sum to 1 over a row's visible keys: how attention decays
  /// with distance.
  std::vector<double> distanceMass;
};

/// The query rows [q0, q1) of one head over its keys, row-major into out ((q1 − q0)·keys floats)
/// from whichever form the group holds. Returns false (out untouched) for a layer it lacks.
bool attentionRows(const AttentionGroup& g, int layer, int item, int head, int q0, int q1,
                   float* out);

/// The profile of one head of a model layer; sinkTokens ≥ 1. Statistics are NaN (as
/// headStatistics says "not kept") for a layer the group lacks.
LongRangeProfile longRangeProfile(const AttentionGroup& g, int layer, int item, int head,
                                  int sinkTokens = 4);

/// The head's [real queries, real keys] matrix max-pooled to at most rows × cols cells (each cell
/// the largest weight of its block; blocks split the axes as evenly as whole cells allow), row-
/// major: a thumbnail of any length that never misses a peak. Empty for a layer the group lacks.
std::vector<float> pooledAttention(const AttentionGroup& g, int layer, int item, int head, int rows,
                                   int cols);

}  // namespace attnscope
