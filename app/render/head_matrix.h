// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QStringList>

#include <atomic>
#include <functional>
#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope::render {

/// One head's [query, key] matrix of one batch item, cropped to the real (non-padding) tokens,
/// with the labels of both axes: what every matrix-drawing view shows.
struct HeadMatrix {
  int rows = 0, cols = 0;      // real queries, real keys (shown ones when specials are hidden)
  std::vector<float> values;   // [rows, cols]; masked scores are NaN
  QStringList rowLabels;       // query tokens, long ones elided in the middle (axes)
  QStringList colLabels;       // key tokens (the context's for cross-attention), likewise
  QStringList rowTexts;        // the query tokens whole (tooltips)
  QStringList colTexts;        // the key tokens whole
  std::vector<int> rowTokens;  // [rows] the token position of each row in the sequence (of its
                               // first token when words are merged)
  std::vector<int> colTokens;  // [cols] likewise for the keys
  std::vector<int> rowLast;    // [rows] the last token position of each row (= rowTokens unless
                               // merged)
  std::vector<int> colLast;    // [cols] likewise
  int rowSegmentStart = -1;    // sentence pairs: the first row of segment 1, -1 for none
  int colSegmentStart = -1;    // likewise for the columns
  int hiddenSpecial = 0;       // special tokens left out (rows and columns alike)
  float minValue = 0, maxValue = 0;  // over finite values
  bool hasMasked = false;            // some score was -inf
  bool scores = false;               // pre-softmax scores rather than weights
  bool distribution = true;          // weights: rows sum to 1 (not scores, not value norms)
  bool missing = false;      // the run did not keep this layer's attention: values are all NaN
  bool mergedWords = false;  // some row or column is a word of several tokens
  /// An on-demand head (AttentionGroup::onDemand) past kMaxOnDemandCells: fill() allocated
  /// nothing (rows = cols = 0, missing set); the heatmap draws it through fillLazy instead.
  bool tooLong = false;
  int droppedSink = 0;  // dropSink(): the first droppedSink keys are left out, rows renormalised

  /// fillLazy: no values at all (values is empty, at() must not be called). rows × cols are the
  /// real queries and keys (after hidden special tokens, merged words and droppedSink); cells are
  /// recomputed on demand through block().
  bool lazy = false;
  const AttentionGroup* lazyGroup = nullptr;  // alive while the result is
  int lazyLayer = 0, lazyItem = 0, lazyHead = 0;
  bool lazyHideSpecial = false, lazyMergeWords = false;  // what the groups below were made for
  /// Lazy rows and columns as groups of token positions, row g holding lazyRowTokens[
  /// lazyRowStart[g], lazyRowStart[g + 1]) (one token each unless words are merged; special tokens
  /// left out when hidden); likewise the columns, which start after droppedSink. Empty when every
  /// row and column is one token in order with nothing hidden or dropped (block() is then a tile).
  std::vector<int> lazyRowStart, lazyRowTokens, lazyColStart, lazyColTokens;
  /// prepareLazy: maxValue is the head's range, and these hold what renormalises a block of rows
  /// without reading whole rows: each query token's factor (1 / its weight on the shown keys when
  /// special tokens are hidden, else 1) and each shown row's (1 / its weight left on the kept keys
  /// when a sink is dropped, else 1).
  bool lazyPrepared = false;
  std::vector<double> lazyTokenScale, lazyRowScale;
  /// The lazy matrix's (q0, q1) cells are a plain tile: no groups, nothing renormalised.
  bool lazyIdentity() const { return lazyRowStart.empty(); }

  /// On-demand heads are recomputed whole (attentionRows) up to this many real cells, 4096 ×
  /// 4096 (64 MB, as a stored head of that length); no view allocates T × T past it.
  static constexpr long long kMaxOnDemandCells = 4096LL * 4096;

  float at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
  /// The row showing token position `token` (the word holding it), or -1 when it is not shown.
  int rowOfToken(int token) const;
  /// The rows showing any of these token positions, sorted, each once.
  std::vector<int> rowsOfTokens(const std::vector<int>& tokens) const;
  /// Rows combined column by column: their sum, or their mean (sum = false). Masked (NaN) cells
  /// are left out; a column with none left is NaN. [cols]
  std::vector<double> combineRows(const std::vector<int>& rows, bool sum) const;
  /// "#3" or, for a merged word, "#3–5": the token positions of a row or column.
  QString rowPositions(int row) const;
  QString colPositions(int col) const;

  /// Weights, or scaled scores when `scores` is set and the result kept them (else weights).
  /// hideSpecial leaves out the rows and columns of special tokens ([CLS], [SEP], <s>) and
  /// renormalises each remaining row of weights to sum to 1 over the keys still shown (scores
  /// and value norms are only left out: they are not a distribution).
  /// mergeWords shows words (wordSpans) instead of tokens: a word's columns are summed (the
  /// attention a word receives) and its rows averaged (what the word attends to), so rows of
  /// weights still sum to 1; scores are averaged over both (masked ones left out).
  /// scoreTerm >= 0 (with scores): that term of the scores (AttentionGroup::scoreTerms) instead
  /// of their sum.
  static HeadMatrix of(const AttentionGroup& result, int layer, int item, int head, bool scores,
                       bool hideSpecial = false, bool mergeWords = false, int scoreTerm = -1);
  /// The same into `out`, reusing its buffer: a view that shows T = 4096 keeps its 64 MB instead
  /// of having the kernel fault in a fresh one on every change.
  static void fill(HeadMatrix& out, const AttentionGroup& result, int layer, int item, int head,
                   bool scores, bool hideSpecial = false, bool mergeWords = false,
                   int scoreTerm = -1);
  /// One head of an on-demand group past kMaxOnDemandCells, as a lazy matrix: labels, tokens and
  /// lengths as fill() gives them (special tokens hidden and words merged as there: hidden rows
  /// and columns are left out and each row renormalised over the shown keys, a word's columns
  /// summed and its rows averaged), values computed by block(), never T × T. dropSink > 0 leaves
  /// out the columns that start in the first dropSink tokens (as dropSink()) and renormalises
  /// each row. prepare: run prepareLazy (every cell read once) before returning.
  static void fillLazy(HeadMatrix& out, const AttentionGroup& group, int layer, int item, int head,
                       int dropSink = 0, bool hideSpecial = false, bool mergeWords = false,
                       bool prepare = true);
  /// Reads a lazy matrix's every cell once, a block of rows at a time: its range (maxValue) and
  /// the row factors (lazyTokenScale, lazyRowScale) that let block() read partial rows. Stops
  /// early (lazyPrepared stays false) once *cancel is set. row, when given, sees every row's
  /// values over all columns as they are computed (a pool thread pools them on the way).
  static void prepareLazy(HeadMatrix& m, const std::atomic<bool>* cancel = nullptr,
                          const std::function<void(int row, const float* values)>& row = {});
  /// The shown rows [r0, r1) of a lazy matrix over all its columns, row-major into out
  /// (rows × cols floats), from the head's whole query rows (so a matrix need not be prepared):
  /// renormalised and merged as block() gives them. tokenScale and rowScale, when given (of
  /// realQueries and rows entries), receive the factors prepareLazy keeps.
  void lazyRows(int r0, int r1, float* out, double* tokenScale = nullptr,
                double* rowScale = nullptr) const;
  /// The cells [r0, r1) × [c0, c1) of a lazy matrix (or of a filled one), row-major into out:
  /// recomputed a block of rows at a time through AttentionSource::tile, never T × T.
  void block(int r0, int r1, int c0, int c1, float* out) const;
  /// One cell, of either kind of matrix.
  float cell(int r, int c) const;
  /// Leaves out the key columns of the first k tokens (an attention sink) and renormalises each
  /// row of weights to sum to 1 over the keys left (scores and value norms are only cropped):
  /// ViewState::dropSink. A row with no weight left stays 0. Nothing when k ≤ 0 or it would leave
  /// no column.
  static void dropSink(HeadMatrix& m, int k);
  /// The log colour scale's lower end for weights up to hi: kLogDecades decades below it.
  static constexpr int kLogDecades = 4;
  static double logFloor(double hi) { return hi * 1e-4; }

  /// Elementwise a − b over the common prefix (labels from a).
  static HeadMatrix difference(const HeadMatrix& a, const HeadMatrix& b);
};

/// The attention weights behind the group a view state names: that group when it is a
/// distribution, else the main one (value norms derive from it). For what needs distributions:
/// statistics, Jensen–Shannon distances.
const AttentionGroup& weightsOf(const AttentionResult& result, const std::string& group);

/// The index of the score term `name` in the group's scoreTerms ("c2p"), -1 when the name is empty
/// or the group does not hold that term (the views then show the scores' sum).
int scoreTermIndex(const AttentionGroup& group, const QString& name);

/// Readable token labels of a batch item: queries, and keys (context tokens when present).
QStringList queryLabels(const AttentionGroup& result, int item);
QStringList keyLabels(const AttentionGroup& result, int item);
/// Real query and key counts of a batch item (the padded size when lengths are missing).
int realQueries(const AttentionGroup& result, int item);
int realKeys(const AttentionGroup& result, int item);
/// A token label short enough for an axis: up to kMaxLabelChars characters as they are, longer
/// ones elided in the middle ("internationa…zationally"), so one long word cannot shrink the
/// matrix to a sliver. The whole text stays in tooltips and data exports.
constexpr int kMaxLabelChars = 24;
QString axisLabel(const QString& label);

/// What a matrix's values are, for colour-bar captions: "attention weight", "scaled score",
/// "value-weighted norm ‖α·f(x)‖".
QString valueCaption(const HeadMatrix& m);
/// What a view says for a model layer the result does not hold: still being computed (an early
/// preview of the run) or not kept (memory limit).
QString missingLayerMessage(const AttentionResult* result, int layer);

/// Whether one head of this group, computed on demand, is past HeadMatrix::kMaxOnDemandCells.
bool tooLongOnDemand(const AttentionGroup& group, int item);

/// Whether a batch item has special tokens to hide (on either axis).
bool hasSpecialTokens(const AttentionGroup& result, int item);
/// "special tokens hidden, rows renormalised": what views and export titles say when they do.
QString hiddenSpecialNote(bool scores);
/// "subwords merged into words: columns summed, rows averaged" (scores: "averaged").
QString mergedWordsNote(bool scores);

}  // namespace attnscope::render
