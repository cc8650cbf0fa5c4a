// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

/// A view of one head's attention matrix restricted to its real tokens: `queries` rows of
/// `keys` weights, row r starting at data + r * stride. Rows are probability distributions
/// (causal rows may carry zeros).
struct MatrixView {
  const float* data = nullptr;
  int queries = 0;  // real query rows
  int keys = 0;     // real key columns
  int stride = 0;   // floats per stored row (the padded key count)

  const float* row(int q) const { return data + static_cast<std::size_t>(q) * stride; }
  float at(int q, int k) const { return row(q)[k]; }
};

/// The [real queries, real keys] matrix of one head of one batch item; data is null for a layer
/// the run did not keep and for attention computed on demand (read that with attentionRows).
MatrixView headView(const AttentionGroup& result, int layer, int item, int head);

/// What one head does, each number averaged over the real queries.
struct HeadStatistics {
  double entropy = 0;        // -Σ_k a_qk ln a_qk, in nats
  double meanDistance = 0;   // Σ_k a_qk |q − k|, in tokens
  double maxWeight = 0;      // each query's largest weight, averaged: how peaked the head is
                             // (the plain maximum is 1 for every causal head: query 0 has one key)
  double previousToken = 0;  // a_{q,q−1} over queries q ≥ 1 (0 when there is a single query)
  double diagonal = 0;       // a_{q,q} over queries q < keys
  double firstToken = 0;     // a_{q,0}
};

HeadStatistics headStatistics(const MatrixView& m);

/// Jensen–Shannon distance between two distributions of n entries: the square root of the
/// JS divergence with base-2 logarithms, so it lies in [0, 1]. Inputs are renormalised to sum to 1;
/// an all-zero input counts as uniform.
double jensenShannonDistance(const float* p, const float* q, int n);

/// JS distance averaged over queries, compared over the common prefix of both matrices
/// (min of the query counts, min of the key counts; truncated rows are renormalised).
/// Returns 0 when the common prefix is empty.
double meanJensenShannonDistance(const MatrixView& a, const MatrixView& b);

/// 1 − mean JS distance between every pair of heads of one batch item, heads numbered
/// layer * heads + head: a symmetric [layers*heads, layers*heads] matrix, row-major, 1 on the
/// diagonal. Near-1 off-diagonal entries mark redundant heads.
std::vector<double> headSimilarity(const AttentionGroup& result, int item);

/// Mean JS distance between each head of `a` and the same head of `b`, two models' runs of the
/// same text (a quantized file against its F16 original, a fine-tune against its base): which
/// heads the difference changes most. [layers*heads], numbered layer * heads + head; NaN for a
/// layer either run did not keep. Throws Error (InvalidArgument) when the two have other layer
/// or head counts, or split batch item `item` into other tokens (the matrices would not line up).
std::vector<double> headDistancesBetween(const AttentionGroup& a, const AttentionGroup& b,
                                         int item);

}  // namespace attnscope
