// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QPolygonF>
#include <QRectF>
#include <QVector>

#include "attention_view.h"

namespace attnscope::render {

struct RenderStyle;

/// The tensor-shape diagram of the selected layer, drawn from the real trace
/// (AttentionResult::traces[layer]): one box per TraceStep with its name and actual shape, an
/// arrow from each input labelled with the operation. Steps flow top to bottom by topological
/// depth, so any variant (fused, per-head, gpt2) lays out. Per-head steps sit in one lane per
/// head; with more heads than fit, the first lanes are drawn and the rest collapse into a
/// "… n more heads" stack. The selected head's lane is highlighted. Hovering a box or an arrow
/// explains the step in a sentence with its PyTorch expression.
class PipelineView final : public AttentionView {
  Q_OBJECT
 public:
  explicit PipelineView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Pipeline; }

  /// One plain sentence about a kind of step ("softmax turns each row …").
  static QString explain(const QString& kind);
  /// The hover text of a step: explanation, PyTorch expression and shape.
  QString stepText(int step) const;

  struct Box {
    int step = -1;  // index into the trace; -1 for the stack of hidden heads
    QRectF rect;
  };
  struct Arrow {
    int from = -1, to = -1;  // step indices (-1: the stack)
    QPolygonF path;
    QString label;
    QPointF labelAt;
  };
  struct Layout {
    QVector<Box> boxes;
    QVector<Arrow> arrows;
    QVector<QRectF> lanes;   // background of each head lane shown
    QVector<int> laneHeads;  // the head of each lane
    QRectF stack;            // empty when every head is shown
    int hiddenHeads = 0;
  };
  /// The diagram's geometry inside rect (public for tests).
  Layout layoutFor(const QRectF& rect, const RenderStyle& style) const;

 protected:
  void rebuild(Change) override { update(); }  // drawn straight from the trace, nothing kept
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  const struct LayerTrace* trace() const;
};

}  // namespace attnscope::render
