// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QPointF>
#include <QPolygonF>
#include <QRectF>
#include <QSizeF>
#include <QTransform>
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
///
/// Legible at any window size: the diagram is laid out at least at its natural size (every box
/// holds its name and shape in full, every row has room for its arrow labels), never squeezed
/// below it. On screen a diagram larger than the view scrolls (drag, wheel) and zooms (Ctrl+wheel;
/// double-click toggles fitting the whole diagram; resetZoom() returns to the natural size); an
/// export scales the whole diagram into the page. Arrows that skip rows (the residual stream) run
/// in a channel beside the boxes they pass, never through them.
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
  /// The smallest diagram (without the caption lines) at which every box holds its text and every
  /// row its arrow labels, for a view `availableWidth` wide (which decides how many head lanes
  /// are drawn). Empty without a trace.
  QSizeF naturalSize(const RenderStyle& style, double availableWidth) const;

  /// Back to the natural size, scrolled to the top left (View › Reset Zoom).
  void resetZoom();
  /// On screen: 1 is the natural size; fitted() draws the whole diagram into the view instead.
  double zoom() const { return m_zoom; }
  bool fitted() const { return m_fit; }
  /// Where the screen's drawing was scrolled to, in its (zoomed) pixels from the top left.
  QPointF scrollOffset() const { return m_pan; }
  /// The diagram as the screen last drew it: its layout and the map from it to the widget.
  struct Frame {
    Layout layout;
    QTransform toWidget;
    QRectF viewport;  // the widget's part the diagram is drawn in
    QSizeF content;   // the diagram's size on screen (zoom applied)
  };
  const Frame& screenFrame() const { return m_screen; }

 protected:
  void rebuild(Change) override { update(); }  // drawn straight from the trace, nothing kept
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  /// The whole layer at kMinExportScale with the caption above and the legend below.
  QSize minimumDrawingSize(const RenderStyle& style, int width) const override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  const struct LayerTrace* trace() const;
  /// The layout and its placement for `area` (screen: zoom and scroll; export: scaled to fit).
  Frame frameFor(const QRectF& area, const RenderStyle& style, bool onScreen);
  void setZoom(double zoom, const QPointF& anchor);
  void showHoverText(QMouseEvent* event);

  double m_zoom = 1.0;
  bool m_fit = false;
  QPointF m_pan;
  Frame m_screen;
  bool m_dragging = false;
  QPointF m_dragFrom, m_panAtPress;
};

}  // namespace attnscope::render
