// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QPointF>
#include <QRectF>

#include <atomic>
#include <memory>
#include <vector>

#include "attention_view.h"
#include "head_matrix.h"

class QCustomPlot;
class QCPAxisRect;
class QMouseEvent;

namespace attnscope::render {

struct RenderStyle;

/// One head as a heatmap: queries on rows (top to bottom), keys on columns, token labels on both
/// axes, a colour bar, and the weights written into the cells of short sequences. Weights map
/// [0, max of the head] onto the palette, so 0 (and every causally masked cell) is always the
/// palette's first colour; scores map [min, max] of the finite scores and masked (−inf) scores get
/// the palette's masked colour. Padding beyond the item's real lengths is not shown.
/// On screen it is an interactive QCustomPlot (wheel zoom, out no further than the whole matrix,
/// drag pan, double-click or resetZoom() for the whole matrix, hover, click to pin a query,
/// Ctrl/Shift click to select several, whose sum or mean shows as bars under the matrix);
/// exports build the same plot offscreen and draw it through a QPicture, so output stays vector: in
/// SVG and PDF each cell is a rectangle up to 256 × 256 cells (MatrixPainter::drawCells).
class HeatmapView final : public AttentionView {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  ~HeatmapView() override;

  ViewKind kind() const override { return ViewKind::Heatmap; }

  /// The hover text of a cell: "query 'tok_i' → key 'tok_j': 0.123".
  QString cellText(int query, int key) const;
  /// The centre of cell (query, key) in the last renderTo's painter coordinates (for tests).
  QPointF lastCellCenter(int query, int key) const;
  /// Shows the whole matrix again after zooming or panning (also on double-click). Zooming out
  /// stops at the whole matrix.
  void resetZoom();
  /// The part of the matrix on screen, in cell coordinates (x: keys, y: queries; a cell spans
  /// ±0.5 around its index).
  QRectF visibleCells() const;
  /// The matrix shown (cropped to real tokens). Lazy (HeadMatrix::lazy, no values) for an
  /// on-demand head past HeadMatrix::kMaxOnDemandCells: the visible cells are recomputed,
  /// max-pooled to the screen's pixels, and at full resolution once zoomed in that far.
  const HeadMatrix& matrix() const { return m_matrix; }

  /// The last image a lazy matrix was drawn into, and what it shows (a replot that shows the same
  /// cells reuses it instead of recomputing them; another colour scale only recolours them).
  struct PooledImage {
    const void* group = nullptr;
    int layer = 0, item = 0, head = 0, drop = 0;
    int r0 = 0, r1 = 0, c0 = 0, c1 = 0, fx = 0, fy = 0;
    double lo = 0, hi = 0;
    bool log = false;
    unsigned int palette = 0;
    QImage image;
    int recomputes = 0;  // not part of what it shows: how often a draw had to pool anew
    bool hideSpecial = false, mergeWords = false;
    std::vector<float> cells;  // [h, w] each pixel's largest weight (−inf: none finite)
    /// The same head with the same rows and columns shown.
    bool sameHead(const PooledImage& o) const {
      return group == o.group && layer == o.layer && item == o.item && head == o.head &&
             drop == o.drop && hideSpecial == o.hideSpecial && mergeWords == o.mergeWords;
    }
    /// The same cells pooled the same way (the colours aside).
    bool sameCells(const PooledImage& o) const {
      return !cells.empty() && sameHead(o) && r0 == o.r0 && r1 == o.r1 && c0 == o.c0 &&
             c1 == o.c1 && fx == o.fx && fy == o.fy;
    }
    bool sameAs(const PooledImage& o) const {
      return !image.isNull() && sameCells(o) && lo == o.lo && hi == o.hi && log == o.log &&
             palette == o.palette;
    }
  };
  /// How many times a lazy matrix's visible cells were recomputed (tests: a replot reuses them).
  int pooledRecomputes() const { return m_pooled.recomputes; }
  /// The last image a lazy matrix was drawn into (one pixel per fy × fx cells), for tests.
  const PooledImage& pooledImage() const { return m_pooled; }
  /// In a shown window a lazy matrix's range and visible cells are computed on a pool thread (the
  /// last image, or a note, is shown meanwhile): true while that runs.
  bool pooledComputing() const { return m_lazyRunning; }

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void paintEvent(QPaintEvent*) override {}  // the plot, a child widget, is the screen
  void rebuild(Change change) override;
  void draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) override;

 private:
  /// Refills the matrix and rebuilds the on-screen plot, keeping the zoom where the shape stays.
  void rebuildPlot();
  /// vector: cells as rectangles (SVG, PDF) rather than one bitmap; pixelScale: device pixels per
  /// logical pixel (the caption says when cells are max-pooled into fewer pixels).
  /// onScreen: the window's own plot, whose lazy cells are pooled off the UI thread when shown.
  void buildPlot(QCustomPlot& plot, const RenderStyle& style, const QSize& size, bool vector,
                 double pixelScale = 1.0, bool onScreen = false) const;
  /// Whether a lazy matrix is read on a pool thread: in a window that is shown.
  bool asyncLazy() const;
  /// Starts pooling `key`'s cells (and the head's range while it is not known) on a pool thread
  /// unless that already runs; cancels an older job.
  void requestPooled(const PooledImage& key) const;
  /// Stops the running job (a new head, a new result) at its next block of rows.
  void cancelPooled() const;
  /// Under the matrix: the selected rows combined (ViewState::aggregate), one bar per key.
  void addSelectionStrip(QCustomPlot& plot, const RenderStyle& style, QCPAxisRect& main,
                         const std::vector<int>& rows) const;
  bool cellAt(const QPointF& pos, int* query, int* key) const;
  void onMouseMove(QMouseEvent* event);
  void onMousePress(QMouseEvent* event);
  void onMouseRelease(QMouseEvent* event);

  QCustomPlot* m_plot = nullptr;
  HeadMatrix m_matrix;
  mutable PooledImage m_pooled;  // the last image of a lazy matrix
  /// What the lazy matrix was filled for (a new head, sink or grouping refills it).
  struct LazyInputs {
    const void* group = nullptr;
    int layer = 0, item = 0, head = 0, drop = 0;
    bool hideSpecial = false, mergeWords = false;
    bool operator==(const LazyInputs& o) const {
      return group == o.group && layer == o.layer && item == o.item && head == o.head &&
             drop == o.drop && hideSpecial == o.hideSpecial && mergeWords == o.mergeWords;
    }
  };
  LazyInputs m_lazyInputs;
  mutable PooledImage m_lazyJob;  // what the running job pools
  mutable std::shared_ptr<std::atomic<bool>> m_lazyCancel;
  mutable quint64 m_lazyGeneration = 0;
  mutable bool m_lazyRunning = false;
  QRectF m_lastPlotArea;
  QPointF m_pressPos;
  bool m_doubleClicked = false;
};

}  // namespace attnscope::render
