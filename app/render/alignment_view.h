// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

#include <vector>

#include "attention_view.h"
#include "head_matrix.h"

class QComboBox;

namespace attnscope::render {

struct RenderStyle;

/// Which source tokens each target token of a translation looks at: an encoder-decoder's
/// cross-attention averaged over the heads of the selected layer (or over every layer's heads),
/// drawn as the target sentence on the left, the source sentence on the right, and for each
/// target token a line to its strongest source token and to up to kTopSources − 1 more of weight
/// kMinWeight or more, its width and opacity the mean weight; the caption counts the lines.
/// Hovering a token, or the pinned query, isolates its lines. Special tokens are left out when
/// hidden, with rows renormalised as in the heatmap. Needs the "cross" group of an
/// encoder-decoder's result.
class AlignmentView final : public AttentionView {
  Q_OBJECT
 public:
  static constexpr int kTopSources = 3;
  static constexpr double kMinWeight = 0.05;

  explicit AlignmentView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Alignment; }

  /// Average over every layer instead of the selected one.
  void setAllLayers(bool all);
  bool allLayers() const { return m_allLayers; }
  /// The averaged [target, source] matrix (rows: target tokens, columns: source tokens).
  const HeadMatrix& mean() const { return m_mean; }
  /// The lines drawn by the last renderTo: (target row, source column, weight).
  struct Line {
    int target = 0, source = 0;
    double weight = 0;
  };
  const std::vector<Line>& lastLines() const { return m_lines; }
  /// Why nothing is drawn, or empty.
  QString problem() const { return m_problem; }

 protected:
  void rebuild(Change) override { average(); }
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  /// The mean cross-attention over the heads averaged, or why there is none.
  void average();
  /// What is averaged and what is left out, above the tokens; returns where it ends.
  double drawCaption(QPainter& painter, const QRect& area, const RenderStyle& style) const;

  QComboBox* m_layers;
  bool m_allLayers = false;
  HeadMatrix m_mean;
  QString m_problem;
  std::vector<Line> m_lines;
  std::vector<QRectF> m_targetRects, m_sourceRects;  // on screen, for hovering
  int m_hoverTarget = -1, m_hoverSource = -1;
};

}  // namespace attnscope::render
