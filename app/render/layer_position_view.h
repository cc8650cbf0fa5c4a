// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QRectF>
#include <QString>

#include <functional>
#include <vector>

#include "attention_view.h"

namespace attnscope::render {

struct RenderStyle;

/// Base of the views drawn as a layers × positions grid of one batch item (the logit lens, the
/// Experts view): the last layer on top, as the residual stream rises through the rows; the
/// item's tokens along the bottom, turned when the columns are narrow; the layer labels on the
/// left; hovering frames a cell and shows cellTip(), clicking calls cellClicked(). A view draws its
/// cells and its legend, the base everything around them.
class LayerPositionView : public AttentionView {
  Q_OBJECT
 public:
  explicit LayerPositionView(QWidget* parent = nullptr);

  virtual int layers() const = 0;
  /// The real positions of the selected batch item.
  virtual int positions() const = 0;
  /// The hover text of a cell.
  virtual QString cellTip(int layer, int position) const = 0;
  /// The cell of (layer, position) in the last drawing, in its painter's coordinates.
  QRectF cellRect(int layer, int position) const;
  /// The sentence drawn instead of the grid; empty when the grid is drawn.
  QString message() const;

 protected:
  void rebuild(Change change) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  /// A left click on a cell (nothing by default).
  virtual void cellClicked(int layer, int position) {
    (void)layer;
    (void)position;
  }

  /// The selected batch item's tokens ([positions] at least).
  const std::vector<Token>& itemTokens() const;
  /// A token as the axis shows it.
  static QString tokenText(const Token& token);
  /// Why the result has nothing for this view (no lens, no router); empty when it has.
  virtual QString missing() const = 0;
  /// Lays the grid out in `area` with `sideWidth` for the layer labels and `legendHeight` below
  /// the token labels. False, with message() or a too-small notice drawn instead, when there is
  /// no grid to draw.
  bool begin(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen,
             double sideWidth, double legendHeight);
  /// The layer labels (`layerLabel(l)`, thinned out when rows are low), the token labels, the
  /// hovered cell's frame on screen and the grid's frame.
  void drawAxes(QPainter& painter, const RenderStyle& style, bool onScreen,
                const std::function<QString(int)>& layerLabel);
  /// Where the legend goes: the strip below the token labels, as wide as the grid.
  QRectF legendRect() const;
  /// Marks the drawing done (on screen: what the mouse hits) or empty.
  void finish(bool onScreen, bool drawn);
  const QRectF& cells() const { return m_lastCells; }

 private:
  bool hit(const QPointF& pos, int* layer, int* position) const;

  QRectF m_lastCells, m_screenCells;  // the grid: [layers] rows × [positions] columns
  QRectF m_inner;                     // the drawing area less its margins
  double m_sideWidth = 0, m_bottom = 0, m_legendHeight = 0;
  bool m_turned = false;
  int m_hoverLayer = -1, m_hoverPosition = -1;
};

}  // namespace attnscope::render
