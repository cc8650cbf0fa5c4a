// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/head_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "analysis/head_statistics_accumulator.h"
#include "attnscope/error.h"

namespace attnscope {

MatrixView headView(const AttentionGroup& result, int layer, int item, int head) {
  MatrixView m;
  // Null for a layer the run did not keep, and for attention computed on demand (there is no
  // stored matrix to point into: read it with attentionRows, long_range.h).
  m.data = result.onDemand() ? nullptr : result.headMatrix(layer, item, head);
  m.stride = result.keys();
  m.queries = item < static_cast<int>(result.queryLengths.size()) ? result.queryLengths[item]
                                                                  : result.queries();
  m.keys =
      item < static_cast<int>(result.keyLengths.size()) ? result.keyLengths[item] : result.keys();
  m.queries = std::clamp(m.queries, 0, result.queries());
  m.keys = std::clamp(m.keys, 0, result.keys());
  return m;
}

HeadStatistics headStatistics(const MatrixView& m) {
  if (m.queries <= 0 || m.keys <= 0) return {};
  if (m.data == nullptr) {  // a layer the run did not keep: unknown ("n/a"), not 0
    const double nan = std::nan("");
    return {nan, nan, nan, nan, nan, nan};
  }
  HeadStatisticsAccumulator s(m.keys);
  for (int q = 0; q < m.queries; ++q) s.add(q, m.row(q));
  return s.result();
}

double jensenShannonDistance(const float* p, const float* q, int n) {
  if (n <= 0) return 0;
  double sumP = 0, sumQ = 0;
  for (int i = 0; i < n; ++i) {
    sumP += std::max(0.0f, p[i]);
    sumQ += std::max(0.0f, q[i]);
  }
  // An all-zero row (fully masked) carries no preference: treat it as uniform.
  const auto prob = [n](const float* v, double sum, int i) {
    return sum > 0 ? std::max(0.0f, v[i]) / sum : 1.0 / n;
  };
  double divergence = 0;
  for (int i = 0; i < n; ++i) {
    const double a = prob(p, sumP, i), b = prob(q, sumQ, i), m = 0.5 * (a + b);
    if (a > 0) divergence += 0.5 * a * std::log2(a / m);
    if (b > 0) divergence += 0.5 * b * std::log2(b / m);
  }
  // Rounding can leave a tiny negative or a value just above 1.
  return std::sqrt(std::clamp(divergence, 0.0, 1.0));
}

double meanJensenShannonDistance(const MatrixView& a, const MatrixView& b) {
  const int queries = std::min(a.queries, b.queries), keys = std::min(a.keys, b.keys);
  if (queries <= 0 || keys <= 0) return 0;
  if (a.data == nullptr || b.data == nullptr) return std::nan("");  // a layer not kept
  double sum = 0;
  for (int q = 0; q < queries; ++q) sum += jensenShannonDistance(a.row(q), b.row(q), keys);
  return sum / queries;
}

std::vector<double> headSimilarity(const AttentionGroup& result, int item) {
  const int layers = result.layers(), heads = result.heads(), n = layers * heads;
  std::vector<double> similarity(static_cast<std::size_t>(n) * n, 1.0);
  std::vector<MatrixView> views;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) views.push_back(headView(result, l, item, h));
  for (int i = 0; i < n; ++i) {
    // A head of a layer that was not kept is like no other head, not like every one.
    if (views[i].data == nullptr) {
      for (int j = 0; j < n; ++j) {
        similarity[static_cast<std::size_t>(i) * n + j] = std::nan("");
        similarity[static_cast<std::size_t>(j) * n + i] = std::nan("");
      }
      continue;
    }
    for (int j = i + 1; j < n; ++j) {
      if (views[j].data == nullptr) continue;
      const double s = 1.0 - meanJensenShannonDistance(views[i], views[j]);
      similarity[static_cast<std::size_t>(i) * n + j] = s;
      similarity[static_cast<std::size_t>(j) * n + i] = s;
    }
  }
  return similarity;
}

std::vector<double> headDistancesBetween(const AttentionGroup& a, const AttentionGroup& b,
                                         int item) {
  if (a.layers() != b.layers() || a.heads() != b.heads())
    throw Error(ErrorKind::InvalidArgument,
                "the two models have other shapes (" + std::to_string(a.layers()) + " layers x " +
                    std::to_string(a.heads()) + " heads against " + std::to_string(b.layers()) +
                    " x " + std::to_string(b.heads()) + "): their heads cannot be compared");
  if (item < 0 || item >= a.batch() || item >= b.batch())
    throw Error(ErrorKind::InvalidArgument,
                "batch item " + std::to_string(item) + " is out of range");
  const std::vector<Token>& ta = a.tokens[static_cast<std::size_t>(item)];
  const std::vector<Token>& tb = b.tokens[static_cast<std::size_t>(item)];
  const auto sameIds = [&] {
    if (ta.size() != tb.size()) return false;
    for (std::size_t i = 0; i < ta.size(); ++i)
      if (ta[i].id != tb[i].id) return false;
    return true;
  };
  if (!sameIds())
    throw Error(ErrorKind::InvalidArgument, "the two models split the text into other tokens (" +
                                                std::to_string(ta.size()) + " against " +
                                                std::to_string(tb.size()) +
                                                "): compare models that share a tokenizer");
  const int layers = a.layers(), heads = a.heads();
  std::vector<double> out(static_cast<std::size_t>(layers) * heads, std::nan(""));
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h) {
      const MatrixView va = headView(a, l, item, h), vb = headView(b, l, item, h);
      if (va.data != nullptr && vb.data != nullptr)
        out[static_cast<std::size_t>(l) * heads + h] = meanJensenShannonDistance(va, vb);
    }
  return out;
}

}  // namespace attnscope
