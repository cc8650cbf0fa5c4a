// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>
#include <QStringList>

#include <memory>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope::render {

enum class ViewKind {
  Heatmap,
  Grid,
  Compare,
  Stats,
  Pipeline,
  Lines,
  Text,
  QueryKey,
  Alignment,
  Ablation,
  Step,
  LogitLens,
  Experts
};
/// "heatmap" | "grid" | "compare" | "stats" | "pipeline" | "lines" | "text" | "qk" | "alignment" |
/// "ablation" | "step" | "logit-lens" | "experts"
QString toString(ViewKind kind);
bool parseViewKind(const QString& s, ViewKind* out);

/// What the text view colours the tokens by.
enum class TextSource { Head, MeanOverHeads, Rollout };
QString toString(TextSource source);  // "head" | "mean" | "rollout"
bool parseTextSource(const QString& s, TextSource* out);

/// How the views combine several selected query tokens: the sum of their rows or their mean.
enum class QueryAggregate { Mean, Sum };
QString toString(QueryAggregate aggregate);  // "mean" | "sum"
bool parseQueryAggregate(const QString& s, QueryAggregate* out);

/// What the stats view charts (ViewState::statistic), in the order of its menu: "entropy",
/// "distance", "max", "prev", "diag", "first", "sink", "distance-profile".
QStringList statisticKeys();
/// The index of `key` in statisticKeys(); an empty key is entropy's 0; -1 for an unknown key.
int statisticIndex(const QString& key);

/// What the user has selected: shared by every view, owned by the document, saved in sessions.
struct ViewState {
  std::string group;  // the attention kind shown: "self", "cross", ...; empty: the main one
  int layer = 0, head = 0, item = 0;            // the selected head (A in Compare)
  int vsLayer = 0, vsHead = 1, vsItem = 0;      // B in Compare
  QString palette = QStringLiteral("viridis");  // viridis | magma | cividis | greyscale
  bool showScores = false;                      // pre-softmax scores instead of weights
  QString scoreTerm;  // with showScores: one term of the scores (AttentionGroup::scoreTerms,
                      // DeBERTa's "c2c", "c2p", "p2c") instead of their sum; empty: the sum
  bool perHeadScale = false;    // grid: each cell scaled to its own max
  int pinnedQuery = -1;         // heatmap: highlighted query's token position, -1 for none; lines,
                                // text and Q/K: the query (token) whose attention they show
  std::vector<int> queryGroup;  // heatmap and text: the query tokens selected together (Ctrl or
                                // Shift click), sorted; empty: just pinnedQuery
  QueryAggregate aggregate = QueryAggregate::Mean;  // how the selected queries are combined
  int pinnedKey = -1;           // Q/K: the key's token position; -1: the query's strongest key
  std::vector<int> lineHeads;   // lines: the heads of the layer overlaid; empty: the selected one
  double lineThreshold = 0.02;  // lines: weights below this are not drawn
  TextSource textSource = TextSource::Head;  // text: the selected head, the layer's mean, rollout
  bool hideSpecial = false;  // leave out [CLS]/[SEP]/<s>/</s> and renormalise the rows
  bool mergeWords = false;   // subword tokens merged into words (HeadMatrix::of)
  bool classroom = false;    // large fonts for projectors
  bool logScale = false;     // heatmap: weights coloured on a log scale (HeadMatrix::logFloor:
                             // kLogDecades decades below the head's largest weight)
  int dropSink = 0;   // heatmap: > 0 leaves out the first dropSink key columns (an attention sink)
                      // and renormalises each row over the rest (HeadMatrix::dropSink)
  QString statistic;  // stats: what the chart shows, one of statisticKeys() ("sink",
                      // "distance-profile", …); empty: entropy

  bool operator==(const ViewState& o) const;
  /// The heads the lines view overlays: lineHeads within [0, heads), else the selected head.
  std::vector<int> overlaidHeads(int heads) const;
  bool operator!=(const ViewState& o) const { return !(*this == o); }
  /// The selected query tokens: queryGroup, else pinnedQuery alone, else none.
  std::vector<int> selectedQueries() const;
  /// A click on query `token`: alone, it pins that token (or unpins it); with Ctrl (toggle) it adds
  /// or removes it from the selection; with Shift (range) it selects every token from the pinned
  /// one to it. pinnedQuery follows the last click; a selection of one is just pinnedQuery.
  void clickQuery(int token, bool toggle, bool range);
};

/// Results are shared read-only between the worker that made them and every view.
using ResultPtr = std::shared_ptr<const AttentionResult>;

}  // namespace attnscope::render
