// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QRectF>
#include <QVector>

#include <atomic>
#include <memory>
#include <string>

#include "attention_view.h"

class QTimer;

namespace attnscope::render {

struct RenderStyle;

/// Every head of every layer as small multiples (layers on rows, heads on columns) plus a
/// "mean over heads" column, for the selected batch item. One shared colour scale [0, max over all
/// heads], or each cell scaled to its own max (ViewState::perHeadScale). Always shows weights.
/// Cells are QImages drawn with nearest-neighbour scaling, cached until the result, item, palette
/// or scaling changes, so 12×12 heads at 128 tokens stay fluid. A click opens a head.
/// Big grids (144 heads of 1024 tokens: 151 M weights to pool) are pooled and coloured on a pool
/// thread while the window says so; painting then only scales the finished tiles. Exports and
/// small grids do it in place.
class GridView final : public AttentionView {
  Q_OBJECT
 public:
  explicit GridView(QWidget* parent = nullptr);

  ViewKind kind() const override { return ViewKind::Grid; }
  /// Queries × keys each tile shows (after hiding special tokens); valid after a paint.
  QSize shownTokens() const { return {m_cols, m_rows}; }
  /// Whether the tiles for the current result and state are ready (false while a pool thread
  /// prepares a big grid for the window).
  bool tilesReady() const { return !m_dirty; }
  /// Query heads per key/value head (grouped-query attention); 1 when every head has its own.
  int sharedKvGroups() const;

  /// The cell of (layer, head) when drawn into rect; head == heads() is the mean column.
  QRectF cellRect(const QRect& rect, const QString& title, int layer, int head) const;

  /// What a pool thread and the view share while the tiles are made: a cancel flag checked
  /// between heads, and how far it is (in heads' worth of rows).
  struct Progress {
    std::atomic<bool> cancelled{false};
    std::atomic<long long> headRows{0};  // rows of heads pooled (a head counts its shown rows)
    std::atomic<long long> rowsPerHead{1};
    int heads = 0;  // layers × heads, set before the job starts
  };

 protected:
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;
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
  /// Every head's tile with its frame, and the layer and head labels.
  void drawTiles(QPainter& painter, const QRect& area, const Layout& lay,
                 const RenderStyle& style) const;
  /// Grouped-query attention: which query heads read the same key/value head.
  void drawKvGroups(QPainter& painter, const Layout& lay, const RenderStyle& style) const;
  /// The colour bar and the line under the grid.
  void drawLegend(QPainter& painter, const QRect& area, const Layout& lay,
                  const RenderStyle& style) const;
  bool hit(const QPointF& pos, int* layer, int* head) const;

  /// All of the view state the tiles depend on: computeTiles sees nothing else, so a field the
  /// tiles come to need is added here, where it also decides when they are redone.
  struct TileInputs {
    std::string group;
    int item = 0;
    bool hideSpecial = false, mergeWords = false;
    QString palette;
    bool perHeadScale = false;
    static TileInputs of(const ViewState& state);
    bool operator==(const TileInputs& o) const;
    bool operator!=(const TileInputs& o) const { return !(*this == o); }
  };
  /// What updateTiles computes from a result and the tile inputs (see grid_view.cpp).
  struct Tiles {
    QVector<QImage> images;
    double max = 0;
    int rows = 0, cols = 0;
    double rowSegment = 0, colSegment = 0;
    int hiddenSpecial = 0;
  };
  static Tiles computeTiles(const ResultPtr& result, const TileInputs& inputs,
                            Progress* progress = nullptr);
  void install(Tiles tiles);
  void updateTiles();
  /// Starts computeTiles on a pool thread unless one for the current state is running.
  void startTilesInBackground();

  TileInputs m_tileInputs = TileInputs::of(ViewState());  // of the tiles shown or being made
  QVector<QImage> m_tiles;     // [layer * (heads + 1) + head]; head == heads is the mean
  double m_max = 0;            // shared scale maximum
  int m_rows = 0, m_cols = 0;  // shown queries and keys of every tile
  double m_rowSegment = 0, m_colSegment = 0;  // segment B's start as a fraction of a side; 0: none
  int m_hiddenSpecial = 0;                    // special tokens left out
  bool m_dirty = true;
  quint64 m_generation = 1;              // bumped whenever the tiles must be redone
  quint64 m_computing = 0;               // the generation a pool thread is working on; 0: none
  std::shared_ptr<Progress> m_progress;  // that job's
  QTimer* m_progressTimer = nullptr;     // repaints the progress while it runs

 public:
  /// "12 / 32 heads" while a pool thread makes the tiles, else empty.
  QString progressText() const;
};

}  // namespace attnscope::render
