// SPDX-License-Identifier: GPL-3.0-or-later
#include "grid_view.h"

#include <QCoreApplication>

#include <QThreadPool>

#include <QPointer>
#include <QTimer>

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <memory>

#include "attnscope/long_range.h"
#include "head_matrix.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {

GridView::GridView(QWidget* parent) : AttentionView(parent) {
  setMouseTracking(true);
  setMinimumSize(200, 160);
  m_progressTimer = new QTimer(this);
  m_progressTimer->setInterval(150);
  connect(m_progressTimer, &QTimer::timeout, this, [this] { update(); });
}

QString GridView::progressText() const {
  if (!m_progress || m_computing == 0) return {};
  const long long done =
      m_progress->headRows.load() / std::max(1LL, m_progress->rowsPerHead.load());
  return QStringLiteral("%1 / %2 heads").arg(done).arg(m_progress->heads);
}

GridView::TileInputs GridView::TileInputs::of(const ViewState& s) {
  return {s.group, s.item, s.hideSpecial, s.mergeWords, s.palette, s.perHeadScale};
}

bool GridView::TileInputs::operator==(const TileInputs& o) const {
  return group == o.group && item == o.item && hideSpecial == o.hideSpecial &&
         mergeWords == o.mergeWords && palette == o.palette && perHeadScale == o.perHeadScale;
}

void GridView::rebuild(Change change) {
  // Every change repaints; the tiles, the costly part, are redone only for a result or for new
  // tile inputs (a selected head is just a frame drawn over them).
  const TileInputs inputs = TileInputs::of(viewState());
  if (change == Change::Result || inputs != m_tileInputs) {
    m_tileInputs = inputs;
    m_dirty = true;
    ++m_generation;
    // A running job for older tiles stops within one head; its tiles are never installed.
    if (m_progress) m_progress->cancelled.store(true);
    m_progress.reset();
    m_computing = 0;
    m_progressTimer->stop();
  }
  update();
}

namespace {

// A grid cell is never this many pixels on screen (12 layers of 1024 tokens would otherwise keep
// 600 MB of tiles); max-pooling keeps a lone strong weight visible where averaging would not.
constexpr int kMaxTileSide = 512;
// All tiles together drawn as vector rectangles up to this many cells (four 256 × 256 heatmaps).
constexpr qint64 kGridVectorCells = 4 * 256 * 256;

/// One head's weights, cropped to [rows, cols] of a matrix with `stride` floats per row and
/// max-pooled until no side exceeds kMaxTileSide.
struct PooledTile {
  std::vector<float> values;  // [rows, cols] after pooling
  int rows = 0;
  int cols = 0;
  float max = 0;
};

/// An empty tile for `rows` × `cols` cells, pooled to at most kMaxTileSide a side.
PooledTile emptyTile(int rows, int cols) {
  const int fy = std::max(1, (rows + kMaxTileSide - 1) / kMaxTileSide);
  const int fx = std::max(1, (cols + kMaxTileSide - 1) / kMaxTileSide);
  PooledTile t;
  t.rows = (rows + fy - 1) / fy;
  t.cols = (cols + fx - 1) / fx;
  t.values.assign(static_cast<std::size_t>(t.rows) * t.cols, 0.0f);
  return t;
}

/// Rows [q0, q1) of a head of `rows` × `cols` cells (row q at m + (q − q0)·stride) pooled into t.
void poolRows(PooledTile& t, const float* m, int q0, int q1, int rows, int cols,
              std::size_t stride) {
  const int fy = std::max(1, (rows + kMaxTileSide - 1) / kMaxTileSide);
  const int fx = std::max(1, (cols + kMaxTileSide - 1) / kMaxTileSide);
  for (int q = q0; q < q1; ++q) {
    const float* row = m + static_cast<std::size_t>(q - q0) * stride;
    float* out = t.values.data() + static_cast<std::size_t>(q / fy) * t.cols;
    for (int c = 0; c < t.cols; ++c) {
      float v = out[c];
      for (int k = c * fx, end = std::min(cols, k + fx); k < end; ++k) v = std::max(v, row[k]);
      out[c] = v;
    }
  }
}

PooledTile pooled(const float* m, int rows, int cols, std::size_t stride) {
  PooledTile t = emptyTile(rows, cols);
  poolRows(t, m, 0, rows, rows, cols, stride);
  for (float v : t.values) t.max = std::max(t.max, v);
  return t;
}

/// Every head of one layer of an on-demand group and their mean, pooled as pooled() pools the
/// stored matrices, from blocks of rows recomputed through attentionRows: never a head's T × T.
/// tiles gets heads + 1 entries (the mean last). lazy, when given (a lazy HeadMatrix of this
/// group and item), supplies the rows instead, with its hidden special tokens and merged words
/// (rows × cols are then its). False when progress was cancelled (checked between heads).
bool poolOnDemandLayer(const AttentionGroup& r, int layer, int item, int rows, int cols,
                       PooledTile* tiles, HeadMatrix* lazy, GridView::Progress* progress) {
  const int heads = r.heads(), stride = lazy ? cols : r.keys();
  const int fy = std::max(1, (rows + kMaxTileSide - 1) / kMaxTileSide);
  const int block = fy * std::max(1, 64 / fy);  // whole tile rows a block
  for (int h = 0; h <= heads; ++h) tiles[h] = emptyTile(rows, cols);
  std::vector<float> buffer(static_cast<std::size_t>(std::min(block, rows)) * stride),
      mean(buffer.size());
  for (int q0 = 0; q0 < rows; q0 += block) {
    const int q1 = std::min(rows, q0 + block);
    const std::size_t n = static_cast<std::size_t>(q1 - q0) * stride;
    std::fill(mean.begin(), mean.begin() + static_cast<std::ptrdiff_t>(n), 0.0f);
    for (int h = 0; h < heads; ++h) {
      if (progress && progress->cancelled.load(std::memory_order_relaxed)) return false;
      if (lazy) {
        lazy->lazyLayer = layer;
        lazy->lazyHead = h;
        lazy->lazyRows(q0, q1, buffer.data());
      } else {
        attentionRows(r, layer, item, h, q0, q1, buffer.data());
      }
      poolRows(tiles[h], buffer.data(), q0, q1, rows, cols, static_cast<std::size_t>(stride));
      for (std::size_t i = 0; i < n; ++i) mean[i] += buffer[i] / heads;
      if (progress) progress->headRows.fetch_add(q1 - q0, std::memory_order_relaxed);
    }
    poolRows(tiles[heads], mean.data(), q0, q1, rows, cols, static_cast<std::size_t>(stride));
  }
  for (int h = 0; h <= heads; ++h)
    for (float v : tiles[h].values) tiles[h].max = std::max(tiles[h].max, v);
  return true;
}

// Weights to pool above which a window's grid is prepared off the UI thread: 4 M weights take
// about 10 ms here; 144 heads of 1024 tokens (151 M) took 0.4 s and froze the window.
constexpr qint64 kBackgroundWork = qint64(4) << 20;

qint64 workOf(const ResultPtr& result, const std::string& group) {
  if (!result) return 0;
  const AttentionGroup& g = result->group(group);
  return qint64(g.layers()) * g.heads() * g.queries() * g.keys();
}

}  // namespace

GridView::Tiles GridView::computeTiles(const ResultPtr& result, const TileInputs& inputs,
                                       Progress* progress) {
  Tiles out;
  if (!result || inputs.item < 0 || inputs.item >= result->group(inputs.group).batch()) return out;
  // The tiles' cells and segment lines (a sentence pair's second part) as a matrix of the group
  // has them: every head's is the same.
  const auto takeShapeOf = [&out](const HeadMatrix& m) {
    out.rows = m.rows;
    out.cols = m.cols;
    out.rowSegment = m.rows > 0 && m.rowSegmentStart > 0 ? double(m.rowSegmentStart) / m.rows : 0;
    out.colSegment = m.cols > 0 && m.colSegmentStart > 0 ? double(m.colSegmentStart) / m.cols : 0;
    out.hiddenSpecial = m.hiddenSpecial;
  };
  const AttentionGroup& r = result->group(inputs.group);
  const int layers = r.layers(), heads = r.heads(), item = inputs.item;
  if (progress) progress->rowsPerHead = std::max(1, realQueries(r, item));
  // Crop (and hide special tokens) through HeadMatrix like every other matrix view, pool every
  // head and each layer's mean, then colour with one scale or one per cell.
  std::vector<PooledTile> tiles(static_cast<std::size_t>(layers) * (heads + 1));
  std::vector<float> mean;
  // On demand: each head recomputed a block of rows at a time and pooled as it goes (a head of
  // 8,192 tokens would be 256 MB whole). Special tokens and words go through HeadMatrix: whole up
  // to HeadMatrix::kMaxOnDemandCells, past it a lazy matrix's rows (its groups, never T × T).
  const bool grouped = inputs.hideSpecial || inputs.mergeWords;
  const bool blocks = r.onDemand() && (tooLongOnDemand(r, item) || !grouped);
  if (blocks) {
    HeadMatrix lazy;
    if (grouped) {
      HeadMatrix::fillLazy(lazy, r, 0, item, 0, 0, inputs.hideSpecial, inputs.mergeWords, false);
      takeShapeOf(lazy);
      if (progress) progress->rowsPerHead = std::max(1, lazy.rows);
    } else {
      out.rows = realQueries(r, item);
      out.cols = realKeys(r, item);
    }
    for (int l = 0; l < layers; ++l) {
      lazy.missing = !r.hasLayer(l);
      if (!poolOnDemandLayer(r, l, item, out.rows, out.cols,
                             &tiles[static_cast<std::size_t>(l) * (heads + 1)],
                             grouped ? &lazy : nullptr, progress))
        return out;  // cancelled: a newer state's tiles follow
    }
  }
  for (int l = 0; l < layers && !blocks; ++l) {
    for (int h = 0; h < heads; ++h) {
      if (progress && progress->cancelled.load(std::memory_order_relaxed)) return out;
      const HeadMatrix m =
          HeadMatrix::of(r, l, item, h, false, inputs.hideSpecial, inputs.mergeWords);
      if (progress) progress->headRows.fetch_add(progress->rowsPerHead.load());
      if (l == 0 && h == 0) {
        mean.assign(m.values.size(), 0.0f);
        takeShapeOf(m);
      }
      if (h == 0) std::fill(mean.begin(), mean.end(), 0.0f);
      tiles[static_cast<std::size_t>(l) * (heads + 1) + h] =
          pooled(m.values.data(), m.rows, m.cols, static_cast<std::size_t>(m.cols));
      for (std::size_t i = 0; i < m.values.size() && i < mean.size(); ++i)
        mean[i] += m.values[i] / heads;
    }
    tiles[static_cast<std::size_t>(l) * (heads + 1) + heads] =
        pooled(mean.data(), out.rows, out.cols, static_cast<std::size_t>(out.cols));
  }
  for (const PooledTile& t : tiles) out.max = std::max<double>(out.max, t.max);
  const Palette palette = Palette::named(inputs.palette);
  out.images.reserve(static_cast<int>(tiles.size()));
  for (PooledTile& t : tiles) {
    const double hi = inputs.perHeadScale ? t.max : out.max;
    out.images.push_back(
        MatrixPainter::colorize(t.values.data(), t.rows, t.cols, palette, 0.0, std::max(hi, 1e-9)));
    t.values = {};  // free as we go: the colour tiles are what stays
  }
  return out;
}

void GridView::install(Tiles tiles) {
  m_tiles = std::move(tiles.images);
  m_max = tiles.max;
  m_rows = tiles.rows;
  m_cols = tiles.cols;
  m_rowSegment = tiles.rowSegment;
  m_colSegment = tiles.colSegment;
  m_hiddenSpecial = tiles.hiddenSpecial;
  m_dirty = false;
}

void GridView::updateTiles() { install(computeTiles(result(), m_tileInputs)); }

void GridView::startTilesInBackground() {
  if (m_computing == m_generation) return;
  m_computing = m_generation;
  const quint64 generation = m_generation;
  auto progress = std::make_shared<Progress>();
  if (result())
    progress->heads =
        result()->group(m_tileInputs.group).layers() * result()->group(m_tileInputs.group).heads();
  m_progress = progress;
  m_progressTimer->start();
  // The QPointer is read on the UI thread only, where the view may be deleted; the pool thread
  // just carries a handle to it.
  const auto self = std::make_shared<QPointer<GridView>>(this);
  QThreadPool::globalInstance()->start(
      [self, generation, progress, shown = result(), inputs = m_tileInputs] {
        Tiles tiles = computeTiles(shown, inputs, progress.get());
        if (progress->cancelled.load()) return;  // a newer state: never installed
        // Back on the UI thread (qApp outlives every view): kept only if nothing changed meanwhile.
        QMetaObject::invokeMethod(
            qApp,
            [self, generation, tiles = std::move(tiles)]() mutable {
              GridView* view = *self;
              if (!view) return;
              if (view->m_computing == generation) {
                view->m_computing = 0;
                view->m_progress.reset();
                view->m_progressTimer->stop();
              }
              if (generation != view->m_generation) return;
              view->install(std::move(tiles));
              view->update();
            },
            Qt::QueuedConnection);
      });
}

GridView::Layout GridView::layoutFor(const QRect& area, const RenderStyle& style) const {
  Layout lay;
  if (!result()) return lay;
  const int layers = result()->group(viewState().group).layers(),
            columns = result()->group(viewState().group).heads() + 1;
  const QFontMetricsF fm(style.font(12));
  const double left = fm.horizontalAdvance(QStringLiteral("L00")) + 14;
  // Grouped-query models get a second row of labels: which key/value head each group reads.
  const double top = fm.height() + 10 + (sharedKvGroups() > 1 ? fm.height() + 8 : 0);
  const double bottom = fm.height() * 2 + 8;  // room for the scale note
  const double barSpace = MatrixPainter::colorBarWidth(style, 14) + 24;
  const double width = area.width() - left - barSpace - 12, height = area.height() - top - bottom;
  // Gaps shrink with the cell so that a 12×12 grid still gets most of the space.
  double cell = std::min(width / (columns + 0.4), height / layers);
  lay.gap = std::clamp(cell * 0.06, 1.0, 6.0);
  lay.meanGap = std::clamp(cell * 0.35, 4.0, 24.0);
  cell = std::min((width - lay.meanGap - lay.gap * columns) / columns,
                  (height - lay.gap * layers) / layers);
  lay.cell = std::max(cell, 2.0);
  const double blockW = columns * (lay.cell + lay.gap) + lay.meanGap;
  const double blockH = layers * (lay.cell + lay.gap);
  // Square cells fill the width of a wide page (one layer of a toy model): the block is then
  // centred in the height it leaves, not stuck to the top with the rest of the page empty.
  const double spare = std::max(0.0, height - blockH);
  lay.cells = QRectF(area.left() + left, area.top() + top + spare / 2, blockW, blockH);
  lay.colorBar = QRectF(lay.cells.right() + 16, lay.cells.top(), 14, std::min(blockH, 360.0));
  return lay;
}

QRectF GridView::cellIn(const Layout& lay, int layer, int head) const {
  const int heads = result() ? result()->group(viewState().group).heads() : 0;
  const double x =
      lay.cells.left() + head * (lay.cell + lay.gap) + (head >= heads ? lay.meanGap : 0);
  const double y = lay.cells.top() + layer * (lay.cell + lay.gap);
  return QRectF(x, y, lay.cell, lay.cell);
}

QRectF GridView::cellRect(const QRect& rect, const QString& title, int layer, int head) const {
  const RenderStyle style = RenderStyle::forExport(viewState());
  QFontMetricsF fm(style.font(16, true));
  const QRect area = title.isEmpty()
                         ? rect
                         : rect.adjusted(0, static_cast<int>(std::ceil(fm.height() * 1.8)), 0, 0);
  return cellIn(layoutFor(area, style), layer, head);
}

void GridView::draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) {
  const ViewState& state = viewState();
  if (m_dirty) {
    if (onScreen && workOf(result(), state.group) > kBackgroundWork) {
      startTilesInBackground();
      const QString done = progressText();
      style.drawMessage(painter, area,
                        done.isEmpty() ? QStringLiteral("Drawing %1 heads…")
                                             .arg(result()->group(state.group).layers() *
                                                  result()->group(state.group).heads())
                                       : QStringLiteral("Drawing heads… %1").arg(done));
      return;
    }
    updateTiles();
  }
  if (!result() || m_tiles.isEmpty()) {
    style.drawMessage(
        painter, area,
        result() ? QStringLiteral("Batch item out of range") : QStringLiteral("No result yet"));
    return;
  }
  const int layers = result()->group(state.group).layers(),
            heads = result()->group(state.group).heads();
  const Layout lay = layoutFor(area, style);
  drawTiles(painter, area, lay, style);
  drawKvGroups(painter, lay, style);
  // The selected head.
  if (state.layer >= 0 && state.layer < layers && state.head >= 0 && state.head < heads) {
    const double w = std::clamp(lay.cell * 0.05, 1.5, 3.0);
    painter.setPen(QPen(style.accent, w));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(cellIn(lay, state.layer, state.head).adjusted(-w / 2, -w / 2, w / 2, w / 2));
  }
  drawLegend(painter, area, lay, style);
}

void GridView::drawTiles(QPainter& painter, const QRect& area, const Layout& lay,
                         const RenderStyle& style) const {
  const int layers = result()->group(viewState().group).layers(),
            heads = result()->group(viewState().group).heads();
  const QFont font = style.font(12);
  const QFontMetricsF fm(font);
  painter.setFont(font);
  // Label every n-th row/column when cells are smaller than the text.
  const int rowStep = std::max(1, static_cast<int>(std::ceil(fm.height() / (lay.cell + lay.gap))));
  const int colStep =
      std::max(1, static_cast<int>(std::ceil((fm.horizontalAdvance(QStringLiteral("H00")) + 4) /
                                             (lay.cell + lay.gap))));
  // Vector output draws cells as rectangles while all tiles together stay within four heatmaps'
  // worth (kGridVectorCells); beyond that each tile is one lossless image.
  qint64 totalCells = 0;
  for (const QImage& tile : m_tiles) totalCells += qint64(tile.width()) * tile.height();
  const int rectangleLimit = totalCells <= kGridVectorCells ? MatrixPainter::kMaxVectorCells : 0;
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h <= heads; ++h) {
      const QRectF cell = cellIn(lay, l, h);
      MatrixPainter::drawCells(painter, cell, m_tiles[l * (heads + 1) + h], rectangleLimit);
      // Sentence pairs: where segment B starts, once cells are big enough to show it.
      if (lay.cell >= 24 && (m_rowSegment > 0 || m_colSegment > 0)) {
        painter.setPen(QPen(style.accent, 1, Qt::DashLine));
        if (m_colSegment > 0) {
          const double x = cell.left() + m_colSegment * cell.width();
          painter.drawLine(QPointF(x, cell.top()), QPointF(x, cell.bottom()));
        }
        if (m_rowSegment > 0) {
          const double y = cell.top() + m_rowSegment * cell.height();
          painter.drawLine(QPointF(cell.left(), y), QPointF(cell.right(), y));
        }
      }
      painter.setPen(QPen(style.frame, 0));
      painter.setBrush(Qt::NoBrush);
      painter.drawRect(cell);
    }
    if (l % rowStep == 0) {
      const QRectF c = cellIn(lay, l, 0);
      painter.setPen(style.text);
      painter.drawText(QRectF(area.left(), c.top(), c.left() - area.left() - 6, c.height()),
                       Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(l));
    }
  }
  painter.setPen(style.text);
  for (int h = 0; h <= heads; ++h) {
    if (h < heads && h % colStep != 0) continue;
    const QRectF c = cellIn(lay, 0, h);
    const QString label = h == heads ? QStringLiteral("mean") : QStringLiteral("H%1").arg(h);
    painter.drawText(QRectF(c.center().x() - 40, c.top() - fm.height() - 6, 80, fm.height()),
                     Qt::AlignHCenter | Qt::AlignBottom, label);
  }
}

void GridView::drawKvGroups(QPainter& painter, const Layout& lay, const RenderStyle& style) const {
  // Grouped-query attention: a bracket over the query heads that read the same key/value head.
  const int group = sharedKvGroups();
  if (group <= 1) return;
  const int heads = result()->group(viewState().group).heads();
  const QFont font = style.font(12);
  const QFontMetricsF fm(font);
  painter.setFont(font);
  painter.setPen(QPen(style.muted, 1));
  for (int g = 0; g * group < heads; ++g) {
    const QRectF a = cellIn(lay, 0, g * group);
    const QRectF b = cellIn(lay, 0, std::min(heads, (g + 1) * group) - 1);
    const double y = a.top() - fm.height() - 10;
    painter.drawLine(QPointF(a.left(), y), QPointF(b.right(), y));
    painter.drawLine(QPointF(a.left(), y), QPointF(a.left(), y + 4));
    painter.drawLine(QPointF(b.right(), y), QPointF(b.right(), y + 4));
    painter.drawText(QRectF(a.left(), y - fm.height() - 2, b.right() - a.left(), fm.height()),
                     Qt::AlignHCenter | Qt::AlignBottom, QStringLiteral("kv %1").arg(g));
  }
  painter.setPen(style.text);
}

void GridView::drawLegend(QPainter& painter, const QRect& area, const Layout& lay,
                          const RenderStyle& style) const {
  const ViewState& state = viewState();
  const Palette palette = Palette::named(state.palette);
  if (state.perHeadScale) {
    MatrixPainter::drawColorBar(painter, lay.colorBar, palette, 0, 1, style,
                                QStringLiteral("fraction of the cell's max"));
  } else {
    const bool weights = !result() || result()->group(state.group).distribution;
    MatrixPainter::drawColorBar(
        painter, lay.colorBar, palette, 0, m_max, style,
        weights ? QStringLiteral("attention weight") : QStringLiteral("value-weighted norm"));
  }
  const QFontMetricsF fm(style.font(12));
  painter.setPen(style.muted);
  painter.setFont(style.font(11));
  painter.drawText(
      QRectF(lay.cells.left(), lay.cells.bottom() + 6, area.right() - lay.cells.left(),
             fm.height() * 1.6),
      Qt::AlignLeft | Qt::AlignTop,
      QStringLiteral("batch item %1 · %2 queries × %3 keys · %4%5%6")
          .arg(state.item)
          .arg(m_rows)
          .arg(m_cols)
          .arg(state.perHeadScale ? QStringLiteral("each cell scaled to its own max")
                                  : QStringLiteral("one colour scale for all cells"))
          .arg(m_hiddenSpecial > 0 ? QStringLiteral(" · ") + hiddenSpecialNote(false) : QString())
          .arg(m_rowSegment > 0 || m_colSegment > 0
                   ? QStringLiteral(" · dashed: start of the second sentence")
                   : QString()));
}

int GridView::sharedKvGroups() const {
  if (!result()) return 1;
  const AttentionGroup& g = result()->group(viewState().group);
  if (g.kvHeads <= 0 || g.kvHeads >= g.heads() || g.heads() % g.kvHeads != 0) return 1;
  return g.heads() / g.kvHeads;
}

bool GridView::hit(const QPointF& pos, int* layer, int* head) const {
  if (!result()) return false;
  const Layout lay = layoutFor(rect(), RenderStyle::forWidget(*this, viewState()));
  for (int l = 0; l < result()->group(viewState().group).layers(); ++l) {
    for (int h = 0; h <= result()->group(viewState().group).heads(); ++h) {
      if (cellIn(lay, l, h).contains(pos)) {
        *layer = l;
        *head = h;
        return true;
      }
    }
  }
  return false;
}

void GridView::mouseMoveEvent(QMouseEvent* event) {
  int l = 0, h = 0;
  if (hit(event->position(), &l, &h)) {
    QString text = h == result()->group(viewState().group).heads()
                       ? QStringLiteral("layer %1, mean over heads").arg(l)
                       : QStringLiteral("layer %1, head %2 (click to open)").arg(l).arg(h);
    if (const int group = sharedKvGroups();
        group > 1 && h < result()->group(viewState().group).heads()) {
      const int kv = h / group;
      text += QStringLiteral("\nreads key/value head %1, shared by heads %2–%3")
                  .arg(kv)
                  .arg(kv * group)
                  .arg(kv * group + group - 1);
    }
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
  } else {
    QToolTip::hideText();
  }
}

void GridView::mouseReleaseEvent(QMouseEvent* event) {
  int l = 0, h = 0;
  if (event->button() == Qt::LeftButton && hit(event->position(), &l, &h) &&
      h < result()->group(viewState().group).heads()) {
    Q_EMIT headActivated(l, h);
  }
}

}  // namespace attnscope::render
