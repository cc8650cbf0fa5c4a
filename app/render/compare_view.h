// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>

#include "attention_view.h"
#include "head_matrix.h"

namespace attnscope::render {

struct RenderStyle;

/// Two heads side by side, A (layer, head, item) and B (vsLayer, vsHead, vsItem), their
/// difference A − B on a diverging palette centred at 0, and the Jensen–Shannon distance between
/// them (base 2, averaged over real queries). Items of different lengths are compared over their
/// common prefix, and the view says so. Hovering a cell marks the same cell in all three panels.
class CompareView final : public AttentionView {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Compare; }
  void setResult(ResultPtr result) override;
  void setViewState(const ViewState& state) override;
  void renderTo(QPainter& painter, const QRect& rect, const QString& title) override;

  /// Mean JS distance between A and B over the common prefix; 0 without a valid selection.
  double distance() const { return m_distance; }
  /// The sentence under the panels ("Jensen–Shannon distance 0.231 …").
  QString summary() const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  struct Layout {
    QRectF cells[3];  // A, B, A − B
    double cell = 0;
    QRectF weightBar, differenceBar;
    QRectF summary;
  };
  Layout layoutFor(const QRect& area, const RenderStyle& style) const;
  void rebuild();

  ResultPtr m_result;
  ViewState m_state;
  HeadMatrix m_a, m_b, m_diff;
  double m_distance = 0;
  bool m_valid = false;
  int m_hoverQuery = -1, m_hoverKey = -1;
};

}  // namespace attnscope::render
