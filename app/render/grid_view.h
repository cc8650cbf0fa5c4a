// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QRectF>
#include <QVector>

#include "attention_view.h"

namespace attnscope::render {

struct RenderStyle;

/// Every head of every layer as small multiples (layers on rows, heads on columns) plus a
/// "mean over heads" column, for the selected batch item. One shared colour scale [0, max over all
/// heads], or each cell scaled to its own max (ViewState::perHeadScale). Always shows weights.
/// Cells are QImages drawn with nearest-neighbour scaling, cached until the result, item, palette
/// or scaling changes, so 12×12 heads at 128 tokens stay fluid. A click opens a head.
class GridView final : public AttentionView {
  Q_OBJECT
 public:
  explicit GridView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Grid; }
  void setResult(ResultPtr result) override;
  void setViewState(const ViewState& state) override;
  /// Queries × keys each tile shows (after hiding special tokens); valid after a paint.
  QSize shownTokens() const { return {m_cols, m_rows}; }
  /// Query heads per key/value head (grouped-query attention); 1 when every head has its own.
  int sharedKvGroups() const;
  void renderTo(QPainter& painter, const QRect& rect, const QString& title) override;

  /// The cell of (layer, head) when drawn into rect; head == heads() is the mean column.
  QRectF cellRect(const QRect& rect, const QString& title, int layer, int head) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  struct Layout {
    QRectF cells;     // the block of all cells
    double cell = 0;  // side of one cell
    double gap = 0;
    double meanGap = 0;  // extra space before the mean column
    QRectF colorBar;
  };
  Layout layoutFor(const QRect& area, const RenderStyle& style) const;
  QRectF cellIn(const Layout& layout, int layer, int head) const;
  bool hit(const QPointF& pos, int* layer, int* head) const;
  void updateTiles();

  ResultPtr m_result;
  ViewState m_state;
  QVector<QImage> m_tiles;     // [layer * (heads + 1) + head]; head == heads is the mean
  double m_max = 0;            // shared scale maximum
  int m_rows = 0, m_cols = 0;  // shown queries and keys of every tile
  double m_rowSegment = 0, m_colSegment = 0;  // segment B's start as a fraction of a side; 0: none
  int m_hiddenSpecial = 0;                    // special tokens left out
  bool m_dirty = true;
};

}  // namespace attnscope::render
