// SPDX-License-Identifier: GPL-3.0-or-later
#include "head_matrix.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::render {
namespace {

QStringList labelsOf(const std::vector<Token>& tokens, int count) {
  QStringList labels;
  for (int i = 0; i < count; ++i) {
    if (i < static_cast<int>(tokens.size())) {
      const Token& t = tokens[static_cast<std::size_t>(i)];
      labels << QString::fromStdString(t.label.empty() ? t.text : t.label);
    } else {
      labels << QString::number(i);  // random input has no tokens: positions stand in
    }
  }
  return labels;
}

void updateRange(HeadMatrix& m) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : m.values) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    } else {
      m.hasMasked = true;
    }
  }
  m.minValue = std::isfinite(lo) ? lo : 0.0f;
  m.maxValue = std::isfinite(hi) ? hi : 0.0f;
}

}  // namespace

int realQueries(const AttentionGroup& r, int item) {
  if (item < 0 || item >= static_cast<int>(r.queryLengths.size())) return r.queries();
  return std::clamp(r.queryLengths[static_cast<std::size_t>(item)], 0, r.queries());
}

int realKeys(const AttentionGroup& r, int item) {
  if (item < 0 || item >= static_cast<int>(r.keyLengths.size())) return r.keys();
  return std::clamp(r.keyLengths[static_cast<std::size_t>(item)], 0, r.keys());
}

QStringList queryLabels(const AttentionGroup& r, int item) {
  const auto& tokens = item < static_cast<int>(r.tokens.size())
                           ? r.tokens[static_cast<std::size_t>(item)]
                           : std::vector<Token>{};
  return labelsOf(tokens, realQueries(r, item));
}

QStringList keyLabels(const AttentionGroup& r, int item) {
  const auto& source = r.contextTokens.empty() ? r.tokens : r.contextTokens;
  const auto& tokens = item < static_cast<int>(source.size())
                           ? source[static_cast<std::size_t>(item)]
                           : std::vector<Token>{};
  return labelsOf(tokens, realKeys(r, item));
}

HeadMatrix HeadMatrix::of(const AttentionGroup& r, int layer, int item, int head, bool scores) {
  HeadMatrix m;
  m.rows = realQueries(r, item);
  m.cols = realKeys(r, item);
  m.scores = scores && !r.scores.empty();
  const float* data = m.scores ? r.scoreMatrix(layer, item, head) : r.headMatrix(layer, item, head);
  m.values.resize(static_cast<std::size_t>(m.rows) * m.cols);
  for (int q = 0; q < m.rows; ++q) {
    for (int k = 0; k < m.cols; ++k) {
      const float v = data[static_cast<std::size_t>(q) * r.keys() + k];
      // -inf marks masked scores; NaN keeps them apart from every real value downstream.
      m.values[static_cast<std::size_t>(q) * m.cols + k] =
          std::isfinite(v) ? v : std::numeric_limits<float>::quiet_NaN();
    }
  }
  m.rowLabels = queryLabels(r, item);
  m.colLabels = keyLabels(r, item);
  updateRange(m);
  return m;
}

HeadMatrix HeadMatrix::difference(const HeadMatrix& a, const HeadMatrix& b) {
  HeadMatrix d;
  d.rows = std::min(a.rows, b.rows);
  d.cols = std::min(a.cols, b.cols);
  d.scores = a.scores;
  d.values.resize(static_cast<std::size_t>(d.rows) * d.cols);
  for (int q = 0; q < d.rows; ++q)
    for (int k = 0; k < d.cols; ++k)
      d.values[static_cast<std::size_t>(q) * d.cols + k] = a.at(q, k) - b.at(q, k);
  d.rowLabels = a.rowLabels.mid(0, d.rows);
  d.colLabels = a.colLabels.mid(0, d.cols);
  updateRange(d);
  return d;
}

}  // namespace attnscope::render
