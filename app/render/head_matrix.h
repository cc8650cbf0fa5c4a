// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QStringList>

#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope::render {

/// One head's [query, key] matrix of one batch item, cropped to the real (non-padding) tokens,
/// with the labels of both axes: what every matrix-drawing view shows.
struct HeadMatrix {
  int rows = 0, cols = 0;            // real queries, real keys
  std::vector<float> values;         // [rows, cols]; masked scores are NaN
  QStringList rowLabels;             // query tokens
  QStringList colLabels;             // key tokens (the context's for cross-attention)
  float minValue = 0, maxValue = 0;  // over finite values
  bool hasMasked = false;            // some score was -inf
  bool scores = false;               // pre-softmax scores rather than weights

  float at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }

  /// Weights, or scaled scores when `scores` is set and the result kept them (else weights).
  static HeadMatrix of(const AttentionGroup& result, int layer, int item, int head, bool scores);
  /// Elementwise a − b over the common prefix (labels from a).
  static HeadMatrix difference(const HeadMatrix& a, const HeadMatrix& b);
};

/// Readable token labels of a batch item: queries, and keys (context tokens when present).
QStringList queryLabels(const AttentionGroup& result, int item);
QStringList keyLabels(const AttentionGroup& result, int item);
/// Real query and key counts of a batch item (the padded size when lengths are missing).
int realQueries(const AttentionGroup& result, int item);
int realKeys(const AttentionGroup& result, int item);

}  // namespace attnscope::render
