// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

#include <memory>
#include <string>

#include "attnscope/attention_result.h"

namespace attnscope::render {

enum class ViewKind { Heatmap, Grid, Compare, Stats, Pipeline };
QString toString(ViewKind kind);  // "heatmap" | "grid" | "compare" | "stats" | "pipeline"
bool parseViewKind(const QString& s, ViewKind* out);

/// What the user has selected: shared by every view, owned by the document, saved in sessions.
struct ViewState {
  std::string group;  // the attention kind shown: "self", "cross", ...; empty: the main one
  int layer = 0, head = 0, item = 0;            // the selected head (A in Compare)
  int vsLayer = 0, vsHead = 1, vsItem = 0;      // B in Compare
  QString palette = QStringLiteral("viridis");  // viridis | magma | cividis | greyscale
  bool showScores = false;                      // pre-softmax scores instead of weights
  bool perHeadScale = false;                    // grid: each cell scaled to its own max
  int pinnedQuery = -1;      // heatmap: highlighted query's token position, -1 for none
  bool hideSpecial = false;  // leave out [CLS]/[SEP]/<s>/</s> and renormalise the rows
  bool classroom = false;    // large fonts for projectors

  bool operator==(const ViewState& o) const;
  bool operator!=(const ViewState& o) const { return !(*this == o); }
};

/// Results are shared read-only between the worker that made them and every view.
using ResultPtr = std::shared_ptr<const AttentionResult>;

}  // namespace attnscope::render
