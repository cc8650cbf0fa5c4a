// SPDX-License-Identifier: GPL-3.0-or-later
#include "head_matrix.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "attnscope/long_range.h"
#include "attnscope/utf8.h"
#include "attnscope/word_spans.h"

namespace attnscope::render {
namespace {

/// One cell of a gather: a finite value is copied and widens [lo, hi]; anything else (a masked
/// −inf, a NaN) is written as NaN. True when it was not finite.
bool gatherCell(float v, float& out, float& lo, float& hi) {
  if (std::isfinite(v)) {
    out = v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    return false;
  }
  out = std::numeric_limits<float>::quiet_NaN();
  return true;
}

/// out[c] = in[c] for c < n, with every non-finite value (a masked −inf, a NaN) written as NaN;
/// lo and hi take the finite values' range. True when any was not finite. The path of long inputs
/// (T² cells a head): four lanes at a time, one pass that finds the range while the row is in
/// cache.
bool gatherRow(const float* in, int n, float* out, float& lo, float& hi) {
  bool masked = false;
  int c = 0;
#if defined(__SSE2__)
  const __m128 absMask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  const __m128 largest = _mm_set1_ps(std::numeric_limits<float>::max());
  const __m128 nan = _mm_set1_ps(std::numeric_limits<float>::quiet_NaN());
  __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  const __m128 allSet = _mm_castsi128_ps(_mm_set1_epi32(-1));
  __m128 anyMasked = _mm_setzero_ps();
  for (; c + 4 <= n; c += 4) {
    const __m128 v = _mm_loadu_ps(in + c);
    // |v| <= FLT_MAX is false for ±inf and for NaN (an unordered compare).
    const __m128 finite = _mm_cmple_ps(_mm_and_ps(v, absMask), largest);
    _mm_storeu_ps(out + c, _mm_or_ps(_mm_and_ps(finite, v), _mm_andnot_ps(finite, nan)));
    // Non-finite lanes become the current bound, which leaves it as it is.
    vlo = _mm_min_ps(vlo, _mm_or_ps(_mm_and_ps(finite, v), _mm_andnot_ps(finite, vlo)));
    vhi = _mm_max_ps(vhi, _mm_or_ps(_mm_and_ps(finite, v), _mm_andnot_ps(finite, vhi)));
    anyMasked = _mm_or_ps(anyMasked, _mm_andnot_ps(finite, allSet));
  }
  alignas(16) float l[4], h[4];
  _mm_store_ps(l, vlo);
  _mm_store_ps(h, vhi);
  for (int i = 0; i < 4; ++i) {
    lo = std::min(lo, l[i]);
    hi = std::max(hi, h[i]);
  }
  masked = _mm_movemask_ps(anyMasked) != 0;
#endif
  for (; c < n; ++c) masked |= gatherCell(in[c], out[c], lo, hi);
  return masked;
}

/// gatherRow over the columns `cols` of `in` (the shown keys when special tokens are hidden).
bool gatherColumns(const float* in, const std::vector<int>& cols, float* out, float& lo,
                   float& hi) {
  bool masked = false;
  for (std::size_t c = 0; c < cols.size(); ++c) masked |= gatherCell(in[cols[c]], out[c], lo, hi);
  return masked;
}

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

/// The shown positions of one axis in groups: one per position, or per word when merging (a word
/// keeps the positions of it that are shown).
std::vector<std::vector<int>> groupsOf(const std::vector<Token>* tokens, int count,
                                       const std::vector<int>& shown, bool mergeWords) {
  std::vector<std::vector<int>> groups;
  if (!mergeWords || !tokens) {
    for (int p : shown) groups.push_back({p});
    return groups;
  }
  std::vector<bool> isShown(static_cast<std::size_t>(count), false);
  for (int p : shown) isShown[static_cast<std::size_t>(p)] = true;
  for (const WordSpan& w : wordSpans(*tokens, count)) {
    std::vector<int> group;
    for (int p = w.first; p <= w.last; ++p)
      if (isShown[static_cast<std::size_t>(p)]) group.push_back(p);
    if (!group.empty()) groups.push_back(std::move(group));
  }
  return groups;
}

/// A group's label: the token's own for one token, the word's text for several.
QString groupText(const std::vector<Token>* tokens, const QStringList& labels,
                  const std::vector<int>& group) {
  if (group.size() == 1 || !tokens) return labels.value(group.front());
  std::string text;
  for (int p : group) text += (*tokens)[static_cast<std::size_t>(p)].text;
  return QString::fromStdString(readableLabel(text));
}

QString positionsText(int first, int last) {
  return first == last ? QStringLiteral("#%1").arg(first)
                       : QStringLiteral("#%1–%2").arg(first).arg(last);
}

// Each shown query's row over the shown keys, renormalised when specials are hidden from a
// distribution (masked scores become NaN).
void copyRenormalised(const float* data, int keys, const std::vector<int>& shownRows,
                      const std::vector<int>& shownCols, bool hideSpecial, HeadMatrix& m) {
  for (int g = 0; g < m.rows; ++g) {
    const float* in =
        data + static_cast<std::size_t>(shownRows[static_cast<std::size_t>(g)]) * keys;
    float* out = m.values.data() + static_cast<std::size_t>(g) * m.cols;
    double total = 0;
    for (int c = 0; c < m.cols; ++c) {
      const float v = in[shownCols[static_cast<std::size_t>(c)]];
      out[c] = std::isfinite(v) ? v : std::numeric_limits<float>::quiet_NaN();
      total += std::isfinite(v) ? v : 0.0;
    }
    // A row whose every shown key was special has nothing left to renormalise: it stays 0.
    if (hideSpecial && m.distribution && total > 0)
      for (int c = 0; c < m.cols; ++c) out[c] = static_cast<float>(out[c] / total);
  }
}

// One cell per pair of words: weights are the word's columns summed and its rows averaged (each
// row renormalised first when specials are hidden); scores are averaged over the block.
void mergeIntoWords(const float* data, const AttentionGroup& r,
                    const std::vector<std::vector<int>>& rowGroups,
                    const std::vector<std::vector<int>>& colGroups,
                    const std::vector<int>& shownCols, bool hideSpecial, HeadMatrix& m) {
  for (int g = 0; g < m.rows; ++g) {
    const auto& queries = rowGroups[static_cast<std::size_t>(g)];
    float* out = m.values.data() + static_cast<std::size_t>(g) * m.cols;
    std::vector<double> sums(static_cast<std::size_t>(m.cols), 0.0);
    std::vector<int> finite(static_cast<std::size_t>(m.cols), 0);
    for (int q : queries) {
      const float* in = data + static_cast<std::size_t>(q) * r.keys();
      double total = 0;
      for (int k : shownCols) total += std::isfinite(in[k]) ? in[k] : 0.0;
      // A row whose every shown key was special has nothing left to renormalise: it stays 0.
      const double scale =
          hideSpecial && !m.scores && r.distribution && total > 0 ? 1.0 / total : 1.0;
      for (int c = 0; c < m.cols; ++c) {
        for (int k : colGroups[static_cast<std::size_t>(c)]) {
          if (!std::isfinite(in[k])) continue;
          sums[static_cast<std::size_t>(c)] += in[k] * scale;
          ++finite[static_cast<std::size_t>(c)];
        }
      }
    }
    for (int c = 0; c < m.cols; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      if (finite[ci] == 0) continue;  // every score of the block was masked
      // Weights: the word's columns summed, its rows averaged; scores: averaged over the block.
      const double n = m.scores ? finite[ci] : static_cast<double>(queries.size());
      out[c] = static_cast<float>(sums[ci] / n);
    }
  }
}

/// The rows and columns a head of `item` shows: the real positions, less the special tokens when
/// they are hidden, in groups of one position or one word. fill() and fillLazy() alike.
struct ShownGroups {
  const std::vector<Token>* queryTokens = nullptr;
  const std::vector<Token>* keyTokens = nullptr;
  int realRows = 0, realCols = 0;
  std::vector<int> shownRows, shownCols;  // the positions shown, before words are merged
  std::vector<std::vector<int>> rows, cols;
};

ShownGroups shownGroups(const AttentionGroup& r, int item, bool hideSpecial, bool mergeWords) {
  ShownGroups g;
  g.queryTokens = tokensOf(r.tokens, item);
  g.keyTokens = r.contextTokens.empty() ? g.queryTokens : tokensOf(r.contextTokens, item);
  g.realRows = realQueries(r, item);
  g.realCols = realKeys(r, item);
  g.shownRows = shownPositions(g.queryTokens, g.realRows, hideSpecial);
  g.shownCols = shownPositions(g.keyTokens, g.realCols, hideSpecial);
  g.rows = groupsOf(g.queryTokens, g.realRows, g.shownRows, mergeWords);
  g.cols = groupsOf(g.keyTokens, g.realCols, g.shownCols, mergeWords);
  return g;
}

/// m's axes from the groups: sizes, each row's and column's first and last token, the hidden
/// specials and where a sentence pair's second part starts.
void takeAxes(HeadMatrix& m, const ShownGroups& g) {
  m.rows = static_cast<int>(g.rows.size());
  m.cols = static_cast<int>(g.cols.size());
  for (const auto& group : g.rows) {
    m.rowTokens.push_back(group.front());
    m.rowLast.push_back(group.back());
  }
  for (const auto& group : g.cols) {
    m.colTokens.push_back(group.front());
    m.colLast.push_back(group.back());
  }
  m.hiddenSpecial = g.realRows - static_cast<int>(g.shownRows.size());
  m.rowSegmentStart = segmentStart(g.queryTokens, m.rowTokens);
  m.colSegmentStart = segmentStart(g.keyTokens, m.colTokens);
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

const AttentionGroup& weightsOf(const AttentionResult& result, const std::string& group) {
  const AttentionGroup& g = result.group(group);
  return g.distribution ? g : result.group();
}

QString valueCaption(const HeadMatrix& m) {
  if (m.scores)
    return m.hasMasked ? QStringLiteral("scaled score (pale: masked −∞)")
                       : QStringLiteral("scaled score");
  return m.distribution ? QStringLiteral("attention weight")
                        : QStringLiteral("value-weighted norm ‖α·f(x)‖");
}

QString mergedWordsNote(bool scores) {
  return scores ? QStringLiteral("subwords merged into words, scores averaged")
                : QStringLiteral("subwords merged into words: columns summed, rows averaged");
}

QString hiddenSpecialNote(bool scores) {
  return scores ? QStringLiteral("special tokens hidden")
                : QStringLiteral("special tokens hidden, rows renormalised");
}

int HeadMatrix::rowOfToken(int token) const {
  for (std::size_t r = 0; r < rowTokens.size(); ++r) {
    const int last = r < rowLast.size() ? rowLast[r] : rowTokens[r];
    if (rowTokens[r] <= token && token <= last) return static_cast<int>(r);
  }
  return -1;
}

std::vector<int> HeadMatrix::rowsOfTokens(const std::vector<int>& tokens) const {
  std::vector<int> out;
  for (int t : tokens) {
    const int r = rowOfToken(t);
    if (r >= 0) out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<double> HeadMatrix::combineRows(const std::vector<int>& rowList, bool sum) const {
  std::vector<double> out(static_cast<std::size_t>(cols), 0.0);
  // A lazy matrix's rows are recomputed once each (rows × cols, not T × T).
  std::vector<float> lazyRows;
  if (lazy) {
    lazyRows.assign(rowList.size() * static_cast<std::size_t>(cols),
                    std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < rowList.size(); ++i)
      if (rowList[i] >= 0 && rowList[i] < rows)
        block(rowList[i], rowList[i] + 1, 0, cols, lazyRows.data() + i * cols);
  }
  for (int c = 0; c < cols; ++c) {
    double total = 0;
    int n = 0;
    for (std::size_t i = 0; i < rowList.size(); ++i) {
      const int r = rowList[i];
      if (r < 0 || r >= rows) continue;
      const float v = lazy ? lazyRows[i * cols + c] : at(r, c);
      if (std::isnan(v)) continue;
      total += v;
      ++n;
    }
    out[static_cast<std::size_t>(c)] = n == 0 ? std::numeric_limits<double>::quiet_NaN()
                                       : sum  ? total
                                              : total / n;
  }
  return out;
}

QString HeadMatrix::rowPositions(int row) const {
  const auto r = static_cast<std::size_t>(row);
  if (r >= rowTokens.size()) return {};
  return positionsText(rowTokens[r], r < rowLast.size() ? rowLast[r] : rowTokens[r]);
}

QString HeadMatrix::colPositions(int col) const {
  const auto c = static_cast<std::size_t>(col);
  if (c >= colTokens.size()) return {};
  return positionsText(colTokens[c], c < colLast.size() ? colLast[c] : colTokens[c]);
}

int scoreTermIndex(const AttentionGroup& group, const QString& name) {
  if (name.isEmpty()) return -1;
  for (std::size_t i = 0; i < group.scoreTerms.size(); ++i)
    if (QString::fromStdString(group.scoreTerms[i].name) == name) return static_cast<int>(i);
  return -1;
}

HeadMatrix HeadMatrix::of(const AttentionGroup& r, int layer, int item, int head, bool scores,
                          bool hideSpecial, bool mergeWords, int scoreTerm) {
  HeadMatrix m;
  fill(m, r, layer, item, head, scores, hideSpecial, mergeWords, scoreTerm);
  return m;
}

void HeadMatrix::fill(HeadMatrix& m, const AttentionGroup& r, int layer, int item, int head,
                      bool scores, bool hideSpecial, bool mergeWords, int scoreTerm) {
  std::vector<float> buffer = std::move(m.values);
  m = HeadMatrix();
  m.values = std::move(buffer);
  const ShownGroups shown = shownGroups(r, item, hideSpecial, mergeWords);
  const std::vector<Token>*queryTokens = shown.queryTokens, *keyTokens = shown.keyTokens;
  const int realRows = shown.realRows, realCols = shown.realCols;
  const std::vector<int>&shownRows = shown.shownRows, &shownCols = shown.shownCols;
  const auto& rowGroups = shown.rows;
  const auto& colGroups = shown.cols;
  takeAxes(m, shown);
  m.mergedWords =
      rowGroups.size() < shown.shownRows.size() || colGroups.size() < shown.shownCols.size();
  const bool term = scores && scoreTerm >= 0 && scoreTerm < static_cast<int>(r.scoreTerms.size());
  m.scores = term || (scores && !r.scores.empty());
  m.distribution = r.distribution && !m.scores;
  const float* data = term ? r.termMatrix(static_cast<std::size_t>(scoreTerm), layer, item, head)
                      : m.scores     ? r.scoreMatrix(layer, item, head)
                      : r.onDemand() ? nullptr
                                     : r.headMatrix(layer, item, head);
  // On demand: the head's real rows recomputed (attentionRows) while they are no larger than a
  // stored head of kMaxOnDemandCells; past that nothing is allocated and the view says so.
  std::vector<float> recomputed;
  if (!m.scores && r.onDemand() && r.hasLayer(layer)) {
    if (tooLongOnDemand(r, item)) {
      m.tooLong = true;
      m.missing = true;
      m.rows = m.cols = 0;
      m.values.clear();
      m.rowTokens.clear();
      m.colTokens.clear();
      m.rowLast.clear();
      m.colLast.clear();
      return;
    }
    recomputed.resize(static_cast<std::size_t>(realRows) * r.keys());
    if (realRows > 0) attentionRows(r, layer, item, head, 0, realRows, recomputed.data());
    data = recomputed.data();
  }
  m.missing = data == nullptr;
  const bool gather = data != nullptr && !m.mergedWords && !(hideSpecial && m.distribution);
  // The gather below writes every cell: the buffer is only resized (a same-sized one from the
  // previous head is reused as it is), not filled first.
  if (gather)
    m.values.resize(static_cast<std::size_t>(m.rows) * m.cols);
  else
    m.values.assign(static_cast<std::size_t>(m.rows) * m.cols,
                    std::numeric_limits<float>::quiet_NaN());
  // Each shown query's row over the shown keys, renormalised when specials are hidden; -inf
  // marks masked scores and becomes NaN, which keeps them apart from every real value downstream.
  // One token per row and column (no words merged): a plain gather, the path of long inputs, which
  // finds the range on the way (one pass over T² values instead of two).
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int g = 0; g < m.rows && gather; ++g) {
    const float* in =
        data + static_cast<std::size_t>(shownRows[static_cast<std::size_t>(g)]) * r.keys();
    float* out = m.values.data() + static_cast<std::size_t>(g) * m.cols;
    if (m.cols == realCols)  // the shown columns are 0..cols-1
      m.hasMasked |= gatherRow(in, m.cols, out, lo, hi);
    else
      m.hasMasked |= gatherColumns(in, shownCols, out, lo, hi);
  }
  if (data != nullptr && !m.mergedWords && !gather)
    copyRenormalised(data, r.keys(), shownRows, shownCols, hideSpecial, m);
  if (data != nullptr && m.mergedWords)
    mergeIntoWords(data, r, rowGroups, colGroups, shownCols, hideSpecial, m);
  const QStringList rowAll = queryLabels(r, item), colAll = keyLabels(r, item);
  for (const auto& g : rowGroups) m.rowTexts << groupText(queryTokens, rowAll, g);
  for (const auto& g : colGroups) m.colTexts << groupText(keyTokens, colAll, g);
  for (const QString& t : m.rowTexts) m.rowLabels << axisLabel(t);
  for (const QString& t : m.colTexts) m.colLabels << axisLabel(t);
  if (gather) {
    m.minValue = std::isfinite(lo) ? lo : 0.0f;
    m.maxValue = std::isfinite(hi) ? hi : 0.0f;
  } else {
    updateRange(m);
  }
  m.hasMasked = m.hasMasked && !m.missing;
}

bool tooLongOnDemand(const AttentionGroup& g, int item) {
  return g.onDemand() &&
         static_cast<long long>(realQueries(g, item)) * g.keys() > HeadMatrix::kMaxOnDemandCells;
}

void HeadMatrix::fillLazy(HeadMatrix& m, const AttentionGroup& r, int layer, int item, int head,
                          int dropSink, bool hideSpecial, bool mergeWords, bool prepare) {
  m = HeadMatrix();
  // The same rows and columns fill() shows, as groups of token positions (never T × T).
  ShownGroups shown = shownGroups(r, item, hideSpecial, mergeWords);
  const std::vector<Token>*queryTokens = shown.queryTokens, *keyTokens = shown.keyTokens;
  const int realRows = shown.realRows, realCols = shown.realCols;
  const auto& rowGroups = shown.rows;
  auto& colGroups = shown.cols;
  m.mergedWords =
      rowGroups.size() < shown.shownRows.size() || colGroups.size() < shown.shownCols.size();
  // The sink, as dropSink(): the leading columns that start inside the first dropSink tokens.
  std::size_t dropped = 0;
  while (dropSink > 0 && dropped < colGroups.size() && colGroups[dropped].front() < dropSink)
    ++dropped;
  if (dropped >= colGroups.size()) dropped = 0;
  m.droppedSink = dropped > 0 ? colGroups[dropped - 1].back() + 1 : 0;
  colGroups.erase(colGroups.begin(), colGroups.begin() + static_cast<std::ptrdiff_t>(dropped));
  m.lazy = true;
  m.lazyGroup = &r;
  m.lazyLayer = layer;
  m.lazyItem = item;
  m.lazyHead = head;
  m.lazyHideSpecial = hideSpecial;
  m.lazyMergeWords = mergeWords;
  m.distribution = r.distribution;
  m.missing = !r.hasLayer(layer);
  takeAxes(m, shown);
  const QStringList rowAll = queryLabels(r, item), colAll = keyLabels(r, item);
  for (const auto& g : rowGroups) {
    m.rowTexts << groupText(queryTokens, rowAll, g);
    m.rowLabels << axisLabel(m.rowTexts.back());
  }
  for (const auto& g : colGroups) {
    m.colTexts << groupText(keyTokens, colAll, g);
    m.colLabels << axisLabel(m.colTexts.back());
  }
  if (m.rows != realRows || m.cols != realCols) {
    // Not one token per row and column in order: block() reads the groups.
    const auto flatten = [](const std::vector<std::vector<int>>& groups, std::vector<int>& start,
                            std::vector<int>& tokens) {
      start.push_back(0);
      for (const auto& g : groups) {
        tokens.insert(tokens.end(), g.begin(), g.end());
        start.push_back(static_cast<int>(tokens.size()));
      }
    };
    flatten(rowGroups, m.lazyRowStart, m.lazyRowTokens);
    flatten(colGroups, m.lazyColStart, m.lazyColTokens);
  }
  if (prepare) prepareLazy(m);
}

void HeadMatrix::prepareLazy(HeadMatrix& m, const std::atomic<bool>* cancel,
                             const std::function<void(int, const float*)>& row) {
  if (!m.lazy || m.lazyGroup == nullptr) return;
  if (m.missing || m.rows == 0 || m.cols == 0) {
    m.lazyPrepared = true;
    return;
  }
  const bool identity = m.lazyIdentity();
  if (!identity) {
    m.lazyTokenScale.assign(static_cast<std::size_t>(realQueries(*m.lazyGroup, m.lazyItem)), 1.0);
    m.lazyRowScale.assign(static_cast<std::size_t>(m.rows), 1.0);
  }
  // The range of the weights: the head read once, a block of rows at a time (the largest weight
  // of a distribution; what the colour scale spans).
  float hi = 0;
  constexpr int kRows = 64;
  std::vector<float> buffer(static_cast<std::size_t>(std::min(kRows, m.rows)) * m.cols);
  for (int r0 = 0; r0 < m.rows; r0 += kRows) {
    if (cancel && cancel->load(std::memory_order_relaxed)) return;
    const int r1 = std::min(m.rows, r0 + kRows);
    m.lazyRows(r0, r1, buffer.data(), identity ? nullptr : m.lazyTokenScale.data(),
               identity ? nullptr : m.lazyRowScale.data());
    const std::size_t n = static_cast<std::size_t>(r1 - r0) * m.cols;
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(buffer[i])) hi = std::max(hi, buffer[i]);
    if (row)
      for (int r = r0; r < r1; ++r)
        row(r, buffer.data() + static_cast<std::size_t>(r - r0) * m.cols);
  }
  m.minValue = 0;
  m.maxValue = hi;
  m.lazyPrepared = true;
}

namespace {

/// The shown rows [r0, r1) of a grouped lazy matrix over columns [c0, c1): each row's tokens'
/// weights a (rows q0.. of `keys` floats from key k0) summed over a column's tokens, scaled by
/// the token's factor, averaged over the row's tokens, then scaled by the row's factor.
/// tokenScale(q) and rowScale(g) give the factors.
template <typename TokenScale, typename RowScale>
void combineGroups(const HeadMatrix& m, const float* a, int q0, int k0, int keys, int r0, int r1,
                   int c0, int c1, float* out, TokenScale tokenScale, RowScale rowScale) {
  const std::size_t width = static_cast<std::size_t>(c1 - c0);
  std::vector<double> acc(width);
  for (int g = r0; g < r1; ++g) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const int t0 = m.lazyRowStart[static_cast<std::size_t>(g)],
              t1 = m.lazyRowStart[static_cast<std::size_t>(g) + 1];
    for (int t = t0; t < t1; ++t) {
      const int q = m.lazyRowTokens[static_cast<std::size_t>(t)];
      const float* in = a + static_cast<std::size_t>(q - q0) * keys;  // key k at in[k − k0]
      const double scale = tokenScale(q, in);
      for (int c = c0; c < c1; ++c) {
        double sum = 0;
        for (int i = m.lazyColStart[static_cast<std::size_t>(c)];
             i < m.lazyColStart[static_cast<std::size_t>(c) + 1]; ++i) {
          const float v = in[m.lazyColTokens[static_cast<std::size_t>(i)] - k0];
          if (std::isfinite(v)) sum += v;
        }
        acc[static_cast<std::size_t>(c - c0)] += sum * scale;
      }
    }
    const double n = std::max(1, t1 - t0);
    for (double& v : acc) v /= n;
    const double scale = rowScale(g, acc);
    float* o = out + static_cast<std::size_t>(g - r0) * width;
    for (std::size_t c = 0; c < width; ++c) o[c] = static_cast<float>(acc[c] * scale);
  }
}

}  // namespace

void HeadMatrix::lazyRows(int r0, int r1, float* out, double* tokenScale, double* rowScale) const {
  if (!lazy || lazyGroup == nullptr || missing || r1 <= r0 || cols == 0) return;
  const AttentionSource& source = *lazyGroup->source;
  const int slot = lazyGroup->slotOf(lazyLayer);
  if (lazyIdentity()) {
    source.tile(slot, lazyItem, lazyHead, r0, r1, 0, cols, out);
    return;
  }
  // The rows' tokens over every real key: what a row's weight on the shown keys is summed from.
  const int keys = realKeys(*lazyGroup, lazyItem);
  const int q0 =
      lazyRowTokens[static_cast<std::size_t>(lazyRowStart[static_cast<std::size_t>(r0)])];
  const int q1 =
      lazyRowTokens[static_cast<std::size_t>(lazyRowStart[static_cast<std::size_t>(r1)] - 1)] + 1;
  std::vector<float> a(static_cast<std::size_t>(q1 - q0) * keys);
  source.tile(slot, lazyItem, lazyHead, q0, q1, 0, keys, a.data());
  const bool renormalise = lazyHideSpecial && distribution;
  std::vector<char> shownKey;
  if (renormalise) {
    const std::vector<Token>* keyTokens = lazyGroup->contextTokens.empty()
                                              ? tokensOf(lazyGroup->tokens, lazyItem)
                                              : tokensOf(lazyGroup->contextTokens, lazyItem);
    shownKey.assign(static_cast<std::size_t>(keys), 1);
    for (int k = 0; keyTokens && k < keys && k < static_cast<int>(keyTokens->size()); ++k)
      shownKey[static_cast<std::size_t>(k)] = !(*keyTokens)[static_cast<std::size_t>(k)].special;
  }
  combineGroups(
      *this, a.data(), q0, 0, keys, r0, r1, 0, cols, out,
      [&](int q, const float* in) {
        double scale = 1.0;
        if (renormalise) {
          // As fill(): a row whose every shown key was special has nothing to renormalise.
          double total = 0;
          for (int k = 0; k < keys; ++k)
            if (shownKey[static_cast<std::size_t>(k)] && std::isfinite(in[k])) total += in[k];
          scale = total > 0 ? 1.0 / total : 1.0;
        }
        if (tokenScale) tokenScale[q] = scale;
        return scale;
      },
      [&](int g, const std::vector<double>& values) {
        double scale = 1.0;
        if (droppedSink > 0 && distribution) {
          // As dropSink(): the row renormalised over the columns left; none left stays 0.
          double total = 0;
          for (double v : values) total += v;
          scale = total > 0 ? 1.0 / total : 0.0;
        }
        if (rowScale) rowScale[g] = scale;
        return scale;
      });
}

void HeadMatrix::block(int r0, int r1, int c0, int c1, float* out) const {
  const std::size_t width = static_cast<std::size_t>(c1 - c0);
  if (!lazy) {
    for (int q = r0; q < r1; ++q)
      std::copy(values.begin() + static_cast<std::ptrdiff_t>(q) * cols + c0,
                values.begin() + static_cast<std::ptrdiff_t>(q) * cols + c1,
                out + static_cast<std::size_t>(q - r0) * width);
    return;
  }
  if (lazyGroup == nullptr || missing || r1 <= r0 || c1 <= c0) return;
  const int slot = lazyGroup->slotOf(lazyLayer);
  if (lazyIdentity()) {
    lazyGroup->source->tile(slot, lazyItem, lazyHead, r0, r1, c0, c1, out);
    return;
  }
  const bool factors = (lazyHideSpecial || droppedSink > 0) && distribution;
  if (factors && !lazyPrepared) {
    // The factors need whole rows: read them (a tooltip's one row, an export's pooling).
    std::vector<float> whole(static_cast<std::size_t>(r1 - r0) * cols);
    lazyRows(r0, r1, whole.data());
    for (int r = r0; r < r1; ++r)
      std::copy(whole.begin() + static_cast<std::ptrdiff_t>(r - r0) * cols + c0,
                whole.begin() + static_cast<std::ptrdiff_t>(r - r0) * cols + c1,
                out + static_cast<std::size_t>(r - r0) * width);
    return;
  }
  // Only the tokens of the rows and columns asked for, with the factors prepareLazy kept.
  const auto token = [](const std::vector<int>& start, const std::vector<int>& tokens, int i) {
    return tokens[static_cast<std::size_t>(start[static_cast<std::size_t>(i)])];
  };
  const int q0 = token(lazyRowStart, lazyRowTokens, r0);
  const int q1 =
      lazyRowTokens[static_cast<std::size_t>(lazyRowStart[static_cast<std::size_t>(r1)] - 1)] + 1;
  const int k0 = token(lazyColStart, lazyColTokens, c0);
  const int k1 =
      lazyColTokens[static_cast<std::size_t>(lazyColStart[static_cast<std::size_t>(c1)] - 1)] + 1;
  std::vector<float> a(static_cast<std::size_t>(q1 - q0) * (k1 - k0));
  lazyGroup->source->tile(slot, lazyItem, lazyHead, q0, q1, k0, k1, a.data());
  combineGroups(
      *this, a.data(), q0, k0, k1 - k0, r0, r1, c0, c1, out,
      [&](int q, const float*) {
        return factors && lazyHideSpecial ? lazyTokenScale[static_cast<std::size_t>(q)] : 1.0;
      },
      [&](int g, const std::vector<double>&) {
        return factors && droppedSink > 0 ? lazyRowScale[static_cast<std::size_t>(g)] : 1.0;
      });
}

float HeadMatrix::cell(int r, int c) const {
  if (!lazy) return at(r, c);
  float v = std::numeric_limits<float>::quiet_NaN();
  block(r, r + 1, c, c + 1, &v);
  return v;
}

void HeadMatrix::dropSink(HeadMatrix& m, int k) {
  if (k <= 0 || m.lazy || m.missing) return;
  int n = 0;  // leading columns (tokens or words) that start inside the first k tokens
  while (n < m.cols && m.colTokens[static_cast<std::size_t>(n)] < k) ++n;
  if (n == 0 || n >= m.cols) return;
  const int cols = m.cols - n;
  std::vector<float> values(static_cast<std::size_t>(m.rows) * cols);
  for (int q = 0; q < m.rows; ++q) {
    const float* in = m.values.data() + static_cast<std::size_t>(q) * m.cols + n;
    float* out = values.data() + static_cast<std::size_t>(q) * cols;
    double total = 0;
    for (int c = 0; c < cols; ++c) total += std::isfinite(in[c]) ? in[c] : 0.0;
    const double scale = m.distribution && !m.scores ? (total > 0 ? 1.0 / total : 0.0) : 1.0;
    for (int c = 0; c < cols; ++c)
      out[c] = std::isfinite(in[c]) ? static_cast<float>(in[c] * scale) : in[c];
  }
  m.values = std::move(values);
  m.droppedSink = m.colLast[static_cast<std::size_t>(n - 1)] + 1;
  m.cols = cols;
  m.colLabels = m.colLabels.mid(n);
  m.colTexts = m.colTexts.mid(n);
  m.colTokens.erase(m.colTokens.begin(), m.colTokens.begin() + n);
  m.colLast.erase(m.colLast.begin(), m.colLast.begin() + n);
  m.colSegmentStart = m.colSegmentStart > n ? m.colSegmentStart - n : -1;
  m.hasMasked = false;
  updateRange(m);
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
  const auto prefix = [](const std::vector<int>& v, int n) {
    return std::vector<int>(v.begin(), v.begin() + std::min<std::size_t>(v.size(), n));
  };
  d.rowTokens = prefix(a.rowTokens, d.rows);
  d.colTokens = prefix(a.colTokens, d.cols);
  d.rowLast = prefix(a.rowLast, d.rows);
  d.colLast = prefix(a.colLast, d.cols);
  d.mergedWords = a.mergedWords;
  d.distribution = a.distribution;
  d.rowSegmentStart = a.rowSegmentStart < d.rows ? a.rowSegmentStart : -1;
  d.colSegmentStart = a.colSegmentStart < d.cols ? a.colSegmentStart : -1;
  d.hiddenSpecial = a.hiddenSpecial;
  updateRange(d);
  return d;
}

QString missingLayerMessage(const AttentionResult* result, int layer) {
  if (result) {
    for (const AttentionGroup& g : result->groups) {
      if (!g.onDemand() || !tooLongOnDemand(g, 0)) continue;
      return QStringLiteral(
                 "Layer %1 is recomputed on demand from %2 tokens: this view needs every cell of "
                 "a head, which it draws up to %3 × %3 tokens. The heatmap (max-pooled), the head "
                 "grid and the statistics show it")
          .arg(layer)
          .arg(realQueries(g, 0))
          .arg(4096);
    }
  }
  if (result && result->preview)
    return QStringLiteral("Layer %1 is still being computed: the view fills in when the run ends")
        .arg(layer);
  return QStringLiteral(
             "Layer %1's attention was not kept (memory limit): it is computed when you open it")
      .arg(layer);
}

}  // namespace attnscope::render
