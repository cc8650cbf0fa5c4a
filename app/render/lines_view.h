// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QRectF>

#include <vector>

#include "attention_view.h"
#include "head_matrix.h"

class QDoubleSpinBox;
class QHBoxLayout;
class QToolButton;

namespace attnscope::render {

struct RenderStyle;

/// BertViz's head view: the tokens of one batch item in two columns, queries on the left and keys
/// on the right, and a line from query i to key j for each overlaid head, its opacity the weight
/// and its colour the head's (Palette::categorical). The heads are ViewState::lineHeads (a
/// selection, or every head of the layer), else the selected head. Hovering a token on screen,
/// or the pinned query, isolates that token's lines. Weights below ViewState::lineThreshold are
/// not drawn, and the view says so and how many: that keeps 256 tokens (65 536 weights a head)
/// readable. Weights are renormalised without special tokens when those are hidden, as in the
/// heatmap. On screen a bar above the drawing toggles heads and sets the threshold, and more
/// than a few thousand lines are drawn without antialiasing (seven times quicker) so hovering
/// stays fluid; exports are always smooth.
class LinesView final : public AttentionView {
  Q_OBJECT
 public:
  explicit LinesView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Lines; }

  /// What the last renderTo drew.
  struct Drawn {
    int lines = 0;           // lines drawn, over every overlaid head
    int belowThreshold = 0;  // non-zero weights left out for being below the threshold
    int focusRow = -1;       // the isolated token's row (or column), -1 for none
    bool focusKey = false;   // the isolated token is a key (right column)
  };
  const Drawn& lastDrawn() const { return m_drawn; }
  /// The label box of a query row (key = false) or key column (key = true) in the last
  /// renderTo, in its painter's coordinates; the widget's own after a paint on screen.
  QRectF tokenRect(bool key, int index) const;
  /// The heads overlaid and their matrices (cropped to real tokens, specials hidden if asked).
  const std::vector<int>& heads() const { return m_heads; }
  const std::vector<HeadMatrix>& matrices() const { return m_matrices; }

 protected:
  void rebuild(Change change) override;
  /// With the screen's style and hover (onScreen) or the export's.
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  struct Layout {
    QRectF caption;          // the legend and the threshold note
    double queryRight = 0;   // right edge of the query labels
    double keyLeft = 0;      // left edge of the key labels
    double labelWidth = 0;   // width of either label column
    double top = 0;          // top of row 0
    double rowHeight = 0;    // one token's height in both columns
    int labelStep = 1;       // every n-th label when rows are lower than the text
    double fontPixels = 12;  // label font size
  };
  Layout layoutFor(const QRectF& area, const RenderStyle& style) const;
  QRectF labelRect(const Layout& lay, bool key, int index) const;
  /// The lines of every overlaid head (counted in m_drawn), batched by opacity.
  void drawLines(QPainter& painter, const Layout& lay, bool onScreen);
  void drawLabels(QPainter& painter, const Layout& lay, const RenderStyle& style) const;
  /// The heads' colours and what was drawn or left out.
  void drawCaption(QPainter& painter, const Layout& lay, const RenderStyle& style) const;
  bool hit(const QPointF& pos, bool* key, int* index) const;
  void updateBar();
  void setHeads(std::vector<int> heads);

  QWidget* m_bar;
  QHBoxLayout* m_headRow;
  QToolButton* m_selected;
  QToolButton* m_all;
  QDoubleSpinBox* m_threshold;
  std::vector<QToolButton*> m_headButtons;

  std::vector<int> m_heads;
  std::vector<HeadMatrix> m_matrices;  // [heads overlaid]
  int m_hoverIndex = -1;
  bool m_hoverKey = false;
  Drawn m_drawn;
  Layout m_lastLayout, m_screenLayout;
  QImage m_cache;  // the widget's drawing without an isolated token; null: draw it again
  Drawn m_cacheDrawn;
};

}  // namespace attnscope::render
