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

namespace {

const std::vector<Token>* tokensOf(const std::vector<std::vector<Token>>& batch, int item) {
  return item >= 0 && item < static_cast<int>(batch.size()) ? &batch[static_cast<std::size_t>(item)]
                                                            : nullptr;
}

/// The positions shown on one axis: all `count`, or those whose token is not special.
std::vector<int> shownPositions(const std::vector<Token>* tokens, int count, bool hideSpecial) {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const bool special = tokens && i < static_cast<int>(tokens->size()) &&
                         (*tokens)[static_cast<std::size_t>(i)].special;
    if (!(hideSpecial && special)) out.push_back(i);
  }
  return out;
}

/// The first shown index whose token is in segment 1, when both segments are shown.
int segmentStart(const std::vector<Token>* tokens, const std::vector<int>& shown) {
  if (!tokens) return -1;
  bool first = false;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto p = static_cast<std::size_t>(shown[i]);
    if (p >= tokens->size()) break;
    const int segment = (*tokens)[p].segment;
    if (segment == 0) first = true;
    if (segment == 1 && first) return static_cast<int>(i);
  }
  return -1;
}

QStringList labelsAt(const QStringList& all, const std::vector<int>& shown) {
  QStringList out;
  for (int i : shown) out << all.value(i);
  return out;
}

}  // namespace

QString axisLabel(const QString& label) {
  const QList<uint> codePoints = label.toUcs4();  // never split a character
  if (codePoints.size() <= kMaxLabelChars) return label;
  const int head = (kMaxLabelChars - 1) / 2, tail = kMaxLabelChars - 1 - head;
  return QString::fromUcs4(reinterpret_cast<const char32_t*>(codePoints.constData()), head) +
         QChar(0x2026) +
         QString::fromUcs4(
             reinterpret_cast<const char32_t*>(codePoints.constData() + codePoints.size() - tail),
             tail);
}

bool hasSpecialTokens(const AttentionGroup& r, int item) {
  for (const auto* tokens : {tokensOf(r.tokens, item), &r.keyTokens(item)}) {
    if (!tokens) continue;
    for (const Token& t : *tokens)
      if (t.special) return true;
  }
  return false;
}

QString hiddenSpecialNote(bool scores) {
  return scores ? QStringLiteral("special tokens hidden")
                : QStringLiteral("special tokens hidden, rows renormalised");
}

int HeadMatrix::rowOfToken(int token) const {
  const auto it = std::find(rowTokens.begin(), rowTokens.end(), token);
  return it == rowTokens.end() ? -1 : static_cast<int>(it - rowTokens.begin());
}

HeadMatrix HeadMatrix::of(const AttentionGroup& r, int layer, int item, int head, bool scores,
                          bool hideSpecial) {
  HeadMatrix m;
  const std::vector<Token>* queryTokens = tokensOf(r.tokens, item);
  const std::vector<Token>* keyTokens =
      r.contextTokens.empty() ? queryTokens : tokensOf(r.contextTokens, item);
  m.rowTokens = shownPositions(queryTokens, realQueries(r, item), hideSpecial);
  m.colTokens = shownPositions(keyTokens, realKeys(r, item), hideSpecial);
  m.rows = static_cast<int>(m.rowTokens.size());
  m.cols = static_cast<int>(m.colTokens.size());
  m.hiddenSpecial = realQueries(r, item) - m.rows;
  m.rowSegmentStart = segmentStart(queryTokens, m.rowTokens);
  m.colSegmentStart = segmentStart(keyTokens, m.colTokens);
  m.scores = scores && !r.scores.empty();
  const float* data = m.scores ? r.scoreMatrix(layer, item, head) : r.headMatrix(layer, item, head);
  m.missing = data == nullptr;
  m.values.assign(static_cast<std::size_t>(m.rows) * m.cols,
                  std::numeric_limits<float>::quiet_NaN());
  for (int q = 0; q < m.rows && data != nullptr; ++q) {
    const float* in =
        data + static_cast<std::size_t>(m.rowTokens[static_cast<std::size_t>(q)]) * r.keys();
    float* out = m.values.data() + static_cast<std::size_t>(q) * m.cols;
    double sum = 0;
    for (int k = 0; k < m.cols; ++k) {
      const float v = in[m.colTokens[static_cast<std::size_t>(k)]];
      // -inf marks masked scores; NaN keeps them apart from every real value downstream.
      out[k] = std::isfinite(v) ? v : std::numeric_limits<float>::quiet_NaN();
      sum += std::isfinite(v) ? v : 0.0;
    }
    // A row whose every shown key was special has nothing left to renormalise: it stays 0.
    if (hideSpecial && !m.scores && sum > 0) {
      for (int k = 0; k < m.cols; ++k) out[k] = static_cast<float>(out[k] / sum);
    }
  }
  m.rowTexts = labelsAt(queryLabels(r, item), m.rowTokens);
  m.colTexts = labelsAt(keyLabels(r, item), m.colTokens);
  for (const QString& t : m.rowTexts) m.rowLabels << axisLabel(t);
  for (const QString& t : m.colTexts) m.colLabels << axisLabel(t);
  updateRange(m);
  m.hasMasked = m.hasMasked && !m.missing;
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
  d.rowTexts = a.rowTexts.mid(0, d.rows);
  d.colTexts = a.colTexts.mid(0, d.cols);
  d.rowTokens.assign(a.rowTokens.begin(),
                     a.rowTokens.begin() + std::min<std::size_t>(a.rowTokens.size(), d.rows));
  d.colTokens.assign(a.colTokens.begin(),
                     a.colTokens.begin() + std::min<std::size_t>(a.colTokens.size(), d.cols));
  d.rowSegmentStart = a.rowSegmentStart < d.rows ? a.rowSegmentStart : -1;
  d.colSegmentStart = a.colSegmentStart < d.cols ? a.colSegmentStart : -1;
  d.hiddenSpecial = a.hiddenSpecial;
  updateRange(d);
  return d;
}

}  // namespace attnscope::render
