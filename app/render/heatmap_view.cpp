// SPDX-License-Identifier: GPL-3.0-or-later
#include "heatmap_view.h"

#include <QCoreApplication>
#include <QFontMetricsF>
#include <QPointer>
#include <QThreadPool>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "matrix_painter.h"
#include "palette.h"
#include "plot_painter.h"
#include "qcustomplot_include.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

constexpr int kMaxAnnotated = 16;  // write values into the cells up to this many tokens

bool validHeadSelection(const AttentionResult& r, const ViewState& s) {
  return s.layer >= 0 && s.layer < r.group(s.group).layers() && s.head >= 0 &&
         s.head < r.group(s.group).heads() && s.item >= 0 && s.item < r.group(s.group).batch();
}

QCPColorGradient gradientOf(const Palette& palette) {
  QCPColorGradient g;
  g.setColorStops(palette.stops());
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(palette.maskedColor());
  return g;
}

// Text labels at every `step`-th position.
QSharedPointer<QCPAxisTickerText> tokenTicker(const QStringList& labels, int step) {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < labels.size(); i += step) ticker->addTick(i, labels[i]);
  return ticker;
}

// Rows of a matrix max-pooled by fy × fx as they arrive (in increasing order): down a pixel
// row's matrix rows first, a loop the compiler vectorises (maxps: NaN never wins, so masked
// cells lose to any real value), then across each pixel's columns.
class Pooler {
 public:
  Pooler(int r0, int c0, int c1, int fx, int fy, int w, int h)
      : m_r0(r0),
        m_width(c1 - c0),
        m_fx(fx),
        m_fy(fy),
        m_w(w),
        m_acc(static_cast<std::size_t>(c1 - c0), -std::numeric_limits<float>::infinity()),
        m_cells(static_cast<std::size_t>(w) * h, -std::numeric_limits<float>::infinity()) {}
  /// Matrix row r over the pooled columns (from c0).
  void row(int r, const float* v) {
    const int y = (r - m_r0) / m_fy;
    if (y != m_y) flush(y);
    float* acc = m_acc.data();
    for (int c = 0; c < m_width; ++c) acc[c] = v[c] > acc[c] ? v[c] : acc[c];
  }
  std::vector<float> finish() {
    flush(-1);
    return std::move(m_cells);
  }

 private:
  void flush(int next) {
    if (m_y >= 0) {
      float* out = m_cells.data() + static_cast<std::size_t>(m_y) * m_w;
      for (int x = 0; x < m_w; ++x) {
        float v = -std::numeric_limits<float>::infinity();
        for (int c = x * m_fx; c < std::min(m_width, (x + 1) * m_fx); ++c)
          v = std::max(v, m_acc[c]);
        out[x] = v;
      }
      std::fill(m_acc.begin(), m_acc.end(), -std::numeric_limits<float>::infinity());
    }
    m_y = next;
  }
  int m_r0, m_width, m_fx, m_fy, m_w, m_y = -1;
  std::vector<float> m_acc, m_cells;
};

// The cells [r0, r1) × [c0, c1) of m max-pooled by fy × fx into w × h values, a pixel row at a
// time (a lazy matrix's rows recomputed: fy × visible keys). prepare: a lazy matrix's range and
// row factors are read in the same pass (every cell once). False when *cancel stopped it.
bool poolCells(HeadMatrix& m, const HeatmapView::PooledImage& k, int w, int h, bool prepare,
               const std::atomic<bool>* cancel, std::vector<float>& cells) {
  Pooler pooler(k.r0, k.c0, k.c1, k.fx, k.fy, w, h);
  if (prepare) {
    HeadMatrix::prepareLazy(m, cancel, [&](int r, const float* v) {
      if (r >= k.r0 && r < k.r1) pooler.row(r, v + k.c0);
    });
    if (!m.lazyPrepared) return false;
  } else {
    std::vector<float> rows;
    for (int y = 0; y < h; ++y) {
      if (cancel && cancel->load(std::memory_order_relaxed)) return false;
      const int ya = k.r0 + y * k.fy, yb = std::min(k.r1, k.r0 + (y + 1) * k.fy);
      const float* data = nullptr;
      if (m.lazy) {
        rows.resize(static_cast<std::size_t>(yb - ya) * (k.c1 - k.c0));
        m.block(ya, yb, k.c0, k.c1, rows.data());
      }
      for (int r = ya; r < yb; ++r) {
        data = m.lazy ? rows.data() + static_cast<std::size_t>(r - ya) * (k.c1 - k.c0)
                      : m.values.data() + static_cast<std::size_t>(r) * m.cols + k.c0;
        pooler.row(r, data);
      }
    }
  }
  cells = pooler.finish();
  return true;
}

// The cells of one head. QCPColorMap would draw one bitmap into every device; this draws the
// cells through MatrixPainter, so SVG and PDF exports get one vector rectangle per cell (up to
// MatrixPainter::kMaxVectorCells). On screen and in PNGs it colours only what is visible, and when
// there are more cells than pixels it max-pools them first (each pixel the largest of its cells),
// so drawing costs O(visible cells) reads and O(pixels) colours, not a T × T bitmap scaled down.
class CellMap final : public QCPColorMap {
 public:
  CellMap(QCPAxis* key, QCPAxis* value, const HeadMatrix& matrix, const Palette& palette, double lo,
          double hi, bool vector, bool logScale, HeatmapView::PooledImage* cache,
          std::function<void(const HeatmapView::PooledImage&)> request)
      : QCPColorMap(key, value),
        m_matrix(matrix),
        m_palette(palette),
        m_lut(palette.lookupTable(256)),
        m_masked(palette.maskedColor().rgb()),
        m_lo(logScale ? std::log10(lo) : lo),
        m_hi(logScale ? std::log10(hi) : hi),
        m_vector(vector && !matrix.lazy),
        m_log(logScale),
        m_cache(cache),
        m_request(std::move(request)) {}

 protected:
  void draw(QCPPainter* painter) override {
    const HeadMatrix& m = m_matrix;
    const QRectF target =
        QRectF(coordsToPixels(-0.5, -0.5), coordsToPixels(m.cols - 0.5, m.rows - 0.5)).normalized();
    if (m_vector && m_log) {
      // The log scale: each weight's colour position log10(v) (the floor and below: the first
      // colour), coloured over [log10(floor), log10(hi)].
      std::vector<float> positions(m.values.size());
      for (std::size_t i = 0; i < positions.size(); ++i)
        positions[i] = std::isfinite(m.values[i]) ? static_cast<float>(std::log10(std::max<double>(
                                                        m.values[i], std::pow(10.0, m_lo))))
                                                  : m.values[i];
      MatrixPainter::drawCells(
          *painter, target,
          MatrixPainter::colorize(positions.data(), m.rows, m.cols, m_palette, m_lo, m_hi));
      return;
    }
    if (m_vector) {
      MatrixPainter::drawCells(*painter, target, MatrixPainter::colorize(m, m_palette, m_lo, m_hi));
      return;
    }
    const QRectF visible = target.intersected(QRectF(clipRect()));
    if (visible.isEmpty() || m.rows == 0 || m.cols == 0) return;
    const double cw = target.width() / m.cols, ch = target.height() / m.rows;
    const auto first = [](double from, double size, int n) {
      return std::clamp(static_cast<int>(std::floor(from / size)), 0, n - 1);
    };
    const auto last = [](double to, double size, int n) {
      return std::clamp(static_cast<int>(std::ceil(to / size)), 1, n);
    };
    const int c0 = first(visible.left() - target.left(), cw, m.cols);
    const int c1 = last(visible.right() - target.left(), cw, m.cols);
    const int r0 = first(visible.top() - target.top(), ch, m.rows);
    const int r1 = last(visible.bottom() - target.top(), ch, m.rows);
    // Device pixels the visible part covers (PNG exports scale the painter by their DPI).
    const QTransform& t = painter->deviceTransform();
    const double sx = std::hypot(t.m11(), t.m12()), sy = std::hypot(t.m21(), t.m22());
    const int pw = std::max(1, static_cast<int>(std::ceil(visible.width() * sx)));
    const int ph = std::max(1, static_cast<int>(std::ceil(visible.height() * sy)));
    const int fx = std::max(1, (c1 - c0 + pw - 1) / pw), fy = std::max(1, (r1 - r0 + ph - 1) / ph);
    const int w = (c1 - c0 + fx - 1) / fx, h = (r1 - r0 + fy - 1) / fy;
    // A lazy (on-demand) matrix recomputes the visible cells: the last pooled cells are kept, so
    // that a replot for a pinned row or a tooltip does not recompute the head, and a new colour
    // scale only recolours them. In a shown window they are pooled on a pool thread.
    HeatmapView::PooledImage key;
    key.group = m.lazyGroup;
    key.layer = m.lazyLayer;
    key.item = m.lazyItem;
    key.head = m.lazyHead;
    key.drop = m.droppedSink;
    key.hideSpecial = m.lazyHideSpecial;
    key.mergeWords = m.lazyMergeWords;
    key.r0 = r0;
    key.r1 = r1;
    key.c0 = c0;
    key.c1 = c1;
    key.fx = fx;
    key.fy = fy;
    key.lo = m_lo;
    key.hi = m_hi;
    key.log = m_log;
    key.palette = paletteKey();
    QImage image;
    if (m.lazy && m_cache && m_cache->sameAs(key)) {
      image = m_cache->image;
    } else if (m.lazy && m_cache && m_cache->sameCells(key) && m.lazyPrepared) {
      image = colour(m_cache->cells, w, h);
      m_cache->lo = m_lo;
      m_cache->hi = m_hi;
      m_cache->log = m_log;
      m_cache->palette = key.palette;
      m_cache->image = image;
    } else if (m.lazy && m_request) {
      m_request(key);
      drawPending(painter, target, visible, cw, ch);
      return;
    } else {
      std::vector<float> cells;
      poolCells(const_cast<HeadMatrix&>(m), key, w, h, false, nullptr, cells);
      image = colour(cells, w, h);
      if (m.lazy && m_cache) {
        const int recomputes = m_cache->recomputes;
        key.cells = std::move(cells);
        key.image = image;
        key.recomputes = recomputes + 1;
        *m_cache = std::move(key);
      }
    }
    painter->save();
    painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
    // Whole blocks, clipped to the visible cells: a last, partial block keeps its scale.
    painter->setClipRect(
        QRectF(target.left() + c0 * cw, target.top() + r0 * ch, (c1 - c0) * cw, (r1 - r0) * ch)
            .intersected(visible),
        Qt::IntersectClip);
    painter->drawImage(
        QRectF(target.left() + c0 * cw, target.top() + r0 * ch, w * fx * cw, h * fy * ch), image);
    painter->restore();
  }

 private:
  unsigned int paletteKey() const {
    return m_lut.size() < 256 ? 0u : m_lut[0] ^ (m_lut[128] * 31u) ^ (m_lut[255] * 7u) ^ m_masked;
  }
  // Pooled cells (w × h) coloured: the log scale colours log10(v); 0 and the floor's decades
  // below it take the first colour (log10 of 0 is −inf, clamped like any value under the floor).
  QImage colour(const std::vector<float>& cells, int w, int h) const {
    QImage image(w, h, QImage::Format_RGB32);
    const double scale = m_hi > m_lo ? 255.0 / (m_hi - m_lo) : 0.0;
    for (int y = 0; y < h; ++y) {
      auto* line = reinterpret_cast<unsigned int*>(image.scanLine(y));
      for (int x = 0; x < w; ++x) {
        float v = cells[static_cast<std::size_t>(y) * w + x];
        if (m_log && std::isfinite(v)) v = v > 0 ? static_cast<float>(std::log10(v)) : -1e30f;
        // + 0.5 and truncation: lround for these non-negative values, without a libm call for
        // each of a few million pixels.
        line[x] = std::isfinite(v)
                      ? m_lut[static_cast<int>(std::clamp((v - m_lo) * scale, 0.0, 255.0) + 0.5)]
                      : m_masked;
      }
    }
    return image;
  }
  // While a pool thread computes the visible cells: the last image of the same head where its
  // cells lie (zooming and panning move it), and a note.
  void drawPending(QCPPainter* painter, const QRectF& target, const QRectF& visible, double cw,
                   double ch) const {
    const HeatmapView::PooledImage* last = m_cache;
    const HeadMatrix& m = m_matrix;
    painter->save();
    painter->setClipRect(visible, Qt::IntersectClip);
    if (last && !last->image.isNull() && last->group == m.lazyGroup && last->layer == m.lazyLayer &&
        last->item == m.lazyItem && last->head == m.lazyHead && last->drop == m.droppedSink &&
        last->hideSpecial == m.lazyHideSpecial && last->mergeWords == m.lazyMergeWords) {
      painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
      const int w = last->image.width(), h = last->image.height();
      painter->drawImage(QRectF(target.left() + last->c0 * cw, target.top() + last->r0 * ch,
                                w * last->fx * cw, h * last->fy * ch),
                         last->image);
    }
    QFont font = painter->font();
    font.setPixelSize(15);
    painter->setFont(font);
    const QString text = QStringLiteral("computing…");
    const QFontMetricsF fm(font);
    const QRectF box(visible.center().x() - fm.horizontalAdvance(text) / 2 - 10,
                     visible.center().y() - fm.height() / 2 - 6, fm.horizontalAdvance(text) + 20,
                     fm.height() + 12);
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0, 0, 0, 150));
    painter->drawRoundedRect(box, 4, 4);
    painter->setPen(Qt::white);
    painter->drawText(box, Qt::AlignCenter, text);
    painter->restore();
  }

  const HeadMatrix& m_matrix;  // the view's, alive while the plot that holds this map is
  Palette m_palette;
  QVector<unsigned int> m_lut;
  unsigned int m_masked;
  double m_lo, m_hi;  // log10 of the range with the log scale
  bool m_vector;
  bool m_log;
  HeatmapView::PooledImage* m_cache;  // the view's, for lazy matrices; may be null
  // Set for the window's plot: pools a lazy matrix's cells off the UI thread.
  std::function<void(const HeatmapView::PooledImage&)> m_request;
};

// Zooming out stops at the whole matrix, and panning stays over it.
void limitRange(QCPAxis* axis, int cells) {
  const QCPRange full(-0.5, cells - 0.5);
  QObject::connect(axis, QOverload<const QCPRange&>::of(&QCPAxis::rangeChanged), axis,
                   [axis, full](const QCPRange& range) {
                     QCPRange r = range;
                     if (r.size() >= full.size()) {
                       r = full;
                     } else if (r.lower < full.lower) {
                       r = QCPRange(full.lower, full.lower + range.size());
                     } else if (r.upper > full.upper) {
                       r = QCPRange(full.upper - range.size(), full.upper);
                     }
                     if (r != range) axis->setRange(r);
                   });
}

// The plot area labelAxes estimated: what decides how many labels fit and when cells pool.
struct PlotArea {
  double width = 0, height = 0, cellWidth = 0;
};

// Token labels on both axes, thinned so they never overlap; the estimate of the plot area is
// refined by QCustomPlot's layout, but it only decides how many labels fit.
PlotArea labelAxes(QCPAxis* x, QCPAxis* y, const HeadMatrix& m, const RenderStyle& style,
                   const QSize& size) {
  const QFont tickFont = style.font(12);
  const QFontMetricsF fm(tickFont);
  double rowLabelWidth = 0, colLabelWidth = 0;
  PlotArea area;
  bool rotate = false;
  int rowStep = 1, colStep = 1;
  const auto layOut = [&] {
    area.width = std::max(50.0, size.width() - rowLabelWidth - 160.0);
    area.cellWidth = area.width / m.cols;
    rotate = colLabelWidth + 6 > area.cellWidth;
    area.height = std::max(50.0, size.height() - (rotate ? colLabelWidth : fm.height()) - 60.0);
    rowStep = std::max(1, static_cast<int>(std::ceil(fm.height() * 1.05 * m.rows / area.height)));
    colStep =
        rotate ? std::max(1, static_cast<int>(std::ceil(fm.height() * 1.05 / area.cellWidth))) : 1;
  };
  // Only labels the axes can draw are measured. Shaping every one of thousands of token labels
  // took 30 of the 100 ms a heatmap at T = 4096 took to draw, for the few dozen that fit. Up to
  // kMeasuredLabels a side every label is measured (as the axes may show them all); past that an
  // even sample decides the steps, then the labels at those steps (the ticks) are measured too.
  constexpr int kMeasuredLabels = 256;
  const int rowProbe = (m.rows + kMeasuredLabels - 1) / kMeasuredLabels,
            colProbe = (m.cols + kMeasuredLabels - 1) / kMeasuredLabels;
  rowLabelWidth = MatrixPainter::labelWidth(m.rowLabels, tickFont, rowProbe);
  colLabelWidth = MatrixPainter::labelWidth(m.colLabels, tickFont, colProbe);
  layOut();
  if (rowProbe > 1 || colProbe > 1) {
    rowLabelWidth =
        std::max(rowLabelWidth, MatrixPainter::labelWidth(m.rowLabels, tickFont, rowStep));
    colLabelWidth = std::max(
        colLabelWidth, MatrixPainter::labelWidth(m.colLabels, tickFont, rotate ? colStep : 1));
    layOut();
  }
  x->setTicker(tokenTicker(m.colLabels, colStep));
  y->setTicker(tokenTicker(m.rowLabels, rowStep));
  x->setTickLabelRotation(rotate ? -90 : 0);
  x->setRange(-0.5, m.cols - 0.5);
  y->setRange(-0.5, m.rows - 0.5);
  y->setRangeReversed(true);  // query 0 at the top, like the matrix
  x->setLabel(QStringLiteral("key"));
  y->setLabel(QStringLiteral("query"));
  return area;
}

// The colour bar right of the matrix, as tall as it, with what the colours mean.
void addColorScale(QCustomPlot& plot, QCPAxisRect& rect, QCPColorMap& map, const RenderStyle& style,
                   const QString& caption) {
  auto* scale = new QCPColorScale(&plot);
  plot.plotLayout()->addElement(0, 1, scale);
  scale->setType(QCPAxis::atRight);
  scale->setGradient(map.gradient());
  scale->setDataScaleType(map.dataScaleType());
  scale->setDataRange(map.dataRange());
  if (map.dataScaleType() == QCPAxis::stLogarithmic)
    scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  scale->setBarWidth(14);
  PlotPainter::styleAxis(scale->axis(), style);
  scale->axis()->setLabel(caption);
  map.setColorScale(scale);
  auto* group = new QCPMarginGroup(&plot);
  rect.setMarginGroup(QCP::msTop | QCP::msBottom, group);
  scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
}

// Each cell's value written in it, in black or white against its colour, where cells are big
// enough for the text (cellPixels: the side of a cell).
void annotateCells(QCustomPlot& plot, QCPAxis* x, QCPAxis* y, const HeadMatrix& m,
                   const Palette& palette, double lo, double hi, const RenderStyle& style,
                   double cellPixels) {
  const double px = std::min(13.0, cellPixels / 3.3);
  // Below 8 pixels the numbers cannot be read (the walkthrough's audit flags text under 7.5):
  // the colours alone, and the hover, give the values then.
  if (px < 8) return;
  QFont f = style.font(px / style.fontScale);
  for (int q = 0; q < m.rows; ++q) {
    for (int k = 0; k < m.cols; ++k) {
      const float v = m.at(q, k);
      if (!m.scores && v == 0.0f) continue;  // causal zeros: the colour says it, text would clutter
      auto* text = new QCPItemText(&plot);
      text->position->setAxes(x, y);
      text->position->setCoords(k, q);
      text->setText(std::isfinite(v) ? MatrixPainter::formatValue(v, 2) : QStringLiteral("−∞"));
      text->setFont(f);
      const QColor c =
          std::isfinite(v) ? palette.colorAt((v - lo) / (hi - lo)) : palette.maskedColor();
      text->setColor(Palette::inkOn(c));
      text->setClipToAxisRect(true);
    }
  }
}

// Sentence pairs: a line where the second segment begins, across the whole matrix.
void addSegmentLines(QCustomPlot& plot, QCPAxis* x, QCPAxis* y, const HeadMatrix& m,
                     const RenderStyle& style) {
  const QPen boundaryPen(style.accent, 1.5, Qt::DashLine);
  if (m.colSegmentStart > 0) {
    auto* line = new QCPItemLine(&plot);
    line->start->setAxes(x, y);
    line->end->setAxes(x, y);
    line->start->setCoords(m.colSegmentStart - 0.5, -0.5);
    line->end->setCoords(m.colSegmentStart - 0.5, m.rows - 0.5);
    line->setPen(boundaryPen);
  }
  if (m.rowSegmentStart > 0) {
    auto* line = new QCPItemLine(&plot);
    line->start->setAxes(x, y);
    line->end->setAxes(x, y);
    line->start->setCoords(-0.5, m.rowSegmentStart - 0.5);
    line->end->setCoords(m.cols - 0.5, m.rowSegmentStart - 0.5);
    line->setPen(boundaryPen);
  }
}

}  // namespace

HeatmapView::HeatmapView(QWidget* parent) : AttentionView(parent), m_plot(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_plot);
  m_plot->setInteractions(QCP::iRangeZoom | QCP::iRangeDrag);
  m_plot->setMouseTracking(true);
  connect(m_plot, &QCustomPlot::mouseMove, this, &HeatmapView::onMouseMove);
  connect(m_plot, &QCustomPlot::mousePress, this, &HeatmapView::onMousePress);
  connect(m_plot, &QCustomPlot::mouseRelease, this, &HeatmapView::onMouseRelease);
  connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
    m_doubleClicked = true;  // the release that follows must not pin or unpin
    resetZoom();
  });
}

void HeatmapView::resetZoom() {
  if (!m_plot->axisRectCount() || m_matrix.rows == 0 || m_matrix.cols == 0) return;
  m_plot->axisRect()->axis(QCPAxis::atBottom)->setRange(-0.5, m_matrix.cols - 0.5);
  m_plot->axisRect()->axis(QCPAxis::atLeft)->setRange(-0.5, m_matrix.rows - 0.5);
  m_plot->replot();
}

QRectF HeatmapView::visibleCells() const {
  if (!m_plot->axisRectCount()) return {};
  const QCPRange x = m_plot->axisRect()->axis(QCPAxis::atBottom)->range();
  const QCPRange y = m_plot->axisRect()->axis(QCPAxis::atLeft)->range();
  return QRectF(x.lower, y.lower, x.size(), y.size());
}

HeatmapView::~HeatmapView() = default;

void HeatmapView::rebuild(Change change) {
  if (change == Change::Result) {
    // A new result may sit where the old one was: nothing lazy of the old one is reused.
    cancelPooled();
    m_matrix = HeadMatrix();
    m_pooled = PooledImage{};
  }
  rebuildPlot();
}

void HeatmapView::resizeEvent(QResizeEvent* event) {
  AttentionView::resizeEvent(event);
  rebuildPlot();  // label thinning and cell text depend on the size
}

void HeatmapView::rebuildPlot() {
  const ViewState& s = viewState();
  if (result() && validHeadSelection(*result(), s)) {
    const AttentionGroup& g = result()->group(s.group);
    if (tooLongOnDemand(g, s.item)) {
      // Recomputed when drawn: only the head's labels, range and row factors are kept (refilled
      // only for another head, since the range reads every cell once). In a shown window that
      // read runs on a pool thread with the first image (requestPooled).
      const LazyInputs inputs{&g, s.layer, s.item, s.head, s.dropSink, s.hideSpecial, s.mergeWords};
      if (!(m_matrix.lazy && inputs == m_lazyInputs)) {
        cancelPooled();
        m_lazyInputs = inputs;
        HeadMatrix::fillLazy(m_matrix, g, s.layer, s.item, s.head, s.dropSink, s.hideSpecial,
                             s.mergeWords, !asyncLazy());
      } else if (!m_matrix.lazyPrepared && !asyncLazy()) {
        HeadMatrix::prepareLazy(m_matrix);  // the window was hidden before its job came back
      }
    } else {
      HeadMatrix::fill(m_matrix, g, s.layer, s.item, s.head, s.showScores, s.hideSpecial,
                       s.mergeWords, scoreTermIndex(g, s.scoreTerm));
      HeadMatrix::dropSink(m_matrix, s.dropSink);
    }
  } else {
    m_matrix = HeadMatrix();
  }
  // Keep the user's zoom when the shape has not changed (pinning a row must not reset it).
  QCPAxisRect* old = m_plot->axisRectCount() ? m_plot->axisRect() : nullptr;
  const bool keep = old &&
                    old->axis(QCPAxis::atBottom)->property("cols").toInt() == m_matrix.cols &&
                    old->axis(QCPAxis::atLeft)->property("rows").toInt() == m_matrix.rows;
  QCPRange xr, yr;
  if (keep) {
    xr = old->axis(QCPAxis::atBottom)->range();
    yr = old->axis(QCPAxis::atLeft)->range();
  }
  buildPlot(*m_plot, RenderStyle::forWidget(*this, viewState()), m_plot->size(), false,
            devicePixelRatioF(), true);
  if (m_plot->axisRectCount() && m_matrix.rows > 0 && m_matrix.cols > 0) {
    QCPAxis* x = m_plot->axisRect()->axis(QCPAxis::atBottom);
    QCPAxis* y = m_plot->axisRect()->axis(QCPAxis::atLeft);
    if (keep) {
      x->setRange(xr);
      y->setRange(yr);
    }
    limitRange(x, m_matrix.cols);
    limitRange(y, m_matrix.rows);
  }
  m_plot->replot();
}

void HeatmapView::buildPlot(QCustomPlot& plot, const RenderStyle& style, const QSize& size,
                            bool vector, double pixelScale, bool onScreen) const {
  plot.clearItems();
  plot.clearPlottables();
  plot.plotLayout()->clear();
  plot.setBackground(style.background);
  auto* rect = new QCPAxisRect(&plot);
  plot.plotLayout()->addElement(0, 0, rect);
  rect->setBackground(style.background);
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  PlotPainter::styleAxis(x, style);
  PlotPainter::styleAxis(y, style);
  rect->setRangeZoomAxes(x, y);
  rect->setRangeDragAxes(x, y);
  const HeadMatrix& m = m_matrix;
  // The shape whose zoom a rebuild may keep: none while no matrix is drawn (a layer the run did
  // not keep, a preview's missing layer), whose axes still have QCustomPlot's default 0–5 range.
  const bool drawn = m.rows > 0 && m.cols > 0 && !m.missing;
  x->setProperty("cols", drawn ? m.cols : -1);
  y->setProperty("rows", drawn ? m.rows : -1);
  if (m.rows == 0 || m.cols == 0 || m.missing) {
    x->setVisible(false);
    y->setVisible(false);
    auto* text = new QCPItemText(&plot);
    text->position->setType(QCPItemPosition::ptViewportRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(m.missing  ? missingLayerMessage(result().get(), viewState().layer)
                  : result() ? QStringLiteral("Selection out of range")
                             : QStringLiteral("No result yet"));
    text->setColor(style.muted);
    text->setFont(style.font(14));
    return;
  }
  const PlotArea area = labelAxes(x, y, m, style, size);

  const Palette palette = Palette::named(viewState().palette);
  // Weights: [0, max] so zero is the palette's first colour; scores: their finite range. The log
  // scale (weights only) spans HeadMatrix::kLogDecades decades below the largest weight.
  const bool logScale = viewState().logScale && !m.scores;
  // A lazy head whose range a pool thread still reads: a neutral [0, 1] until it is known.
  const double hi = m.scores                    ? std::max<double>(m.maxValue, m.minValue + 1e-6)
                    : m.lazy && !m.lazyPrepared ? 1.0
                                                : std::max<double>(m.maxValue, 1e-6);
  const double lo = m.scores ? m.minValue : logScale ? HeadMatrix::logFloor(hi) : 0.0;
  // The map only draws the cells and feeds the colour scale: no QCPColorMapData needed.
  std::function<void(const PooledImage&)> request;
  if (onScreen && m.lazy && asyncLazy())
    request = [this](const PooledImage& key) { requestPooled(key); };
  auto* map = new CellMap(x, y, m, palette, lo, hi, vector, logScale, &m_pooled, request);
  map->setGradient(gradientOf(palette));
  map->setDataRange(QCPRange(lo, hi));
  if (logScale) map->setDataScaleType(QCPAxis::stLogarithmic);
  QString caption = valueCaption(m);
  if (m.droppedSink > 0)
    caption += QStringLiteral(" · first %1 key%2 hidden%3")
                   .arg(m.droppedSink)
                   .arg(m.droppedSink == 1 ? QString() : QStringLiteral("s"))
                   .arg(m.distribution && !m.scores ? QStringLiteral(", renormalised") : QString());
  if (logScale) caption += QStringLiteral(" · log scale, %1 decades").arg(HeadMatrix::kLogDecades);
  if (m.hiddenSpecial > 0)
    caption += QStringLiteral(" · ") + hiddenSpecialNote(m.scores || !m.distribution);
  if (m.mergedWords) caption += QStringLiteral(" · ") + mergedWordsNote(m.scores);
  if (m.lazy) {
    // Recomputed on demand: the whole head is pooled to the pixels; zooming in recomputes the
    // visible tile, at full resolution once it has fewer cells than pixels.
    const int fy = std::max(1, static_cast<int>(std::ceil(m.rows / (area.height * pixelScale))));
    const int fx = std::max(1, static_cast<int>(std::ceil(m.cols / (area.width * pixelScale))));
    caption += QStringLiteral(" · on demand, max-pooled: each pixel %1 × %2 %3")
                   .arg(fy)
                   .arg(fx)
                   .arg(m.mergedWords ? QStringLiteral("cells") : QStringLiteral("tokens"));
    if (!m.lazyPrepared) caption += QStringLiteral(" · computing the range…");
  } else if (!vector && (m.cols > area.width * pixelScale || m.rows > area.height * pixelScale)) {
    // More cells than pixels: CellMap shows each pixel as the largest of its cells.
    caption += QStringLiteral(" · max-pooled: a pixel shows its largest cell");
  }
  addColorScale(plot, *rect, *map, style, caption);

  if (m.rows <= kMaxAnnotated && m.cols <= kMaxAnnotated)
    annotateCells(plot, x, y, m, palette, lo, hi, style,
                  std::min(area.cellWidth, area.height / m.rows));
  addSegmentLines(plot, x, y, m, style);
  // The selected queries are outlined, the last one clicked more strongly.
  const int pinnedRow = m.rowOfToken(viewState().pinnedQuery);
  const std::vector<int> selected = m.rowsOfTokens(viewState().selectedQueries());
  for (int row : selected) {
    auto* pin = new QCPItemRect(&plot);
    pin->topLeft->setAxes(x, y);
    pin->bottomRight->setAxes(x, y);
    pin->topLeft->setCoords(-0.5, row - 0.5);
    pin->bottomRight->setCoords(m.cols - 0.5, row + 0.5);
    pin->setPen(QPen(style.accent, row == pinnedRow ? 2.5 : 1.5));
    pin->setBrush(Qt::NoBrush);
  }
  if (selected.size() > 1) addSelectionStrip(plot, style, *rect, selected);
}

void HeatmapView::addSelectionStrip(QCustomPlot& plot, const RenderStyle& style, QCPAxisRect& main,
                                    const std::vector<int>& rows) const {
  const HeadMatrix& m = m_matrix;
  const bool sum = viewState().aggregate == QueryAggregate::Sum;
  const std::vector<double> combined = m.combineRows(rows, sum);
  auto* strip = new QCPAxisRect(&plot);
  plot.plotLayout()->addElement(1, 0, strip);
  plot.plotLayout()->setRowStretchFactor(0, 4);
  plot.plotLayout()->setRowStretchFactor(1, 1);
  strip->setBackground(style.background);
  auto* side = new QCPMarginGroup(&plot);
  main.setMarginGroup(QCP::msLeft | QCP::msRight, side);
  strip->setMarginGroup(QCP::msLeft | QCP::msRight, side);
  QCPAxis* x = strip->axis(QCPAxis::atBottom);
  QCPAxis* y = strip->axis(QCPAxis::atLeft);
  PlotPainter::styleAxis(x, style);
  PlotPainter::styleAxis(y, style);
  x->setTicks(false);  // the keys are labelled under the matrix, right above
  x->setRange(main.axis(QCPAxis::atBottom)->range());
  // Zooming and panning the matrix moves the strip with it.
  QObject::connect(main.axis(QCPAxis::atBottom),
                   QOverload<const QCPRange&>::of(&QCPAxis::rangeChanged), x,
                   QOverload<const QCPRange&>::of(&QCPAxis::setRange));
  strip->setRangeDrag(Qt::Orientations());
  strip->setRangeZoom(Qt::Orientations());
  auto* bars = new QCPBars(x, y);
  bars->setWidth(0.9);
  bars->setPen(Qt::NoPen);
  bars->setBrush(style.accent);
  double hi = 0, lo = 0;
  for (int c = 0; c < m.cols; ++c) {
    const double v = combined[static_cast<std::size_t>(c)];
    if (!std::isfinite(v)) continue;
    bars->addData(c, v);
    hi = std::max(hi, v);
    lo = std::min(lo, v);
  }
  y->setRange(lo, hi > lo ? hi : lo + 1);
  y->setLabel(QStringLiteral("%1 of %2 queries")
                  .arg(sum ? QStringLiteral("sum") : QStringLiteral("mean"))
                  .arg(rows.size()));
}

bool HeatmapView::asyncLazy() const { return window() && window()->isVisible(); }

void HeatmapView::cancelPooled() const {
  if (m_lazyCancel) m_lazyCancel->store(true);
  m_lazyCancel.reset();
  m_lazyRunning = false;
  ++m_lazyGeneration;
}

void HeatmapView::requestPooled(const PooledImage& key) const {
  if (m_lazyRunning && m_lazyJob.sameHead(key) && m_lazyJob.r0 == key.r0 &&
      m_lazyJob.r1 == key.r1 && m_lazyJob.c0 == key.c0 && m_lazyJob.c1 == key.c1 &&
      m_lazyJob.fx == key.fx && m_lazyJob.fy == key.fy)
    return;
  cancelPooled();  // a zoom, a pan or another head: the older cells are not wanted any more
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  m_lazyCancel = cancel;
  m_lazyJob = key;
  m_lazyRunning = true;
  const quint64 generation = m_lazyGeneration;
  // The QPointer is read on the UI thread only, where the view may be deleted; the job holds the
  // result, so the matrix copy's group stays alive.
  const auto self = std::make_shared<QPointer<HeatmapView>>(const_cast<HeatmapView*>(this));
  QThreadPool::globalInstance()->start([self, generation, cancel, key, matrix = m_matrix,
                                        shown = result()]() mutable {
    const int w = (key.c1 - key.c0 + key.fx - 1) / key.fx;
    const int h = (key.r1 - key.r0 + key.fy - 1) / key.fy;
    std::vector<float> cells;
    if (!poolCells(matrix, key, w, h, !matrix.lazyPrepared, cancel.get(), cells)) return;
    QMetaObject::invokeMethod(
        qApp,
        [self, generation, key, matrix = std::move(matrix), cells = std::move(cells)]() mutable {
          HeatmapView* view = *self;
          if (!view || generation != view->m_lazyGeneration) return;
          view->m_lazyRunning = false;
          view->m_lazyCancel.reset();
          HeadMatrix& m = view->m_matrix;
          const bool sameHead =
              m.lazy && m.lazyGroup == matrix.lazyGroup && m.lazyLayer == matrix.lazyLayer &&
              m.lazyItem == matrix.lazyItem && m.lazyHead == matrix.lazyHead &&
              m.droppedSink == matrix.droppedSink && m.lazyHideSpecial == matrix.lazyHideSpecial &&
              m.lazyMergeWords == matrix.lazyMergeWords;
          if (!sameHead) return;
          const bool newRange = !m.lazyPrepared;
          if (newRange) {
            m.minValue = matrix.minValue;
            m.maxValue = matrix.maxValue;
            m.lazyTokenScale = std::move(matrix.lazyTokenScale);
            m.lazyRowScale = std::move(matrix.lazyRowScale);
            m.lazyPrepared = true;
          }
          const int recomputes = view->m_pooled.recomputes;
          view->m_pooled = key;
          view->m_pooled.cells = std::move(cells);
          view->m_pooled.image = QImage();
          view->m_pooled.recomputes = recomputes + 1;
          // A new range changes the colour scale and its caption: the plot is rebuilt.
          if (newRange)
            view->rebuildPlot();
          else
            view->m_plot->replot();
        },
        Qt::QueuedConnection);
  });
}

void HeatmapView::draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool) {
  // An export needs the finished image: a lazy head's range is read here when a pool thread has
  // not done it yet.
  if (m_matrix.lazy && !m_matrix.lazyPrepared) HeadMatrix::prepareLazy(m_matrix);
  // A private plot: exporting must not disturb the zoom of the one on screen.
  QCustomPlot plot;
  plot.resize(area.size());
  const QTransform& t = painter.deviceTransform();
  buildPlot(plot, style, area.size(), MatrixPainter::isVectorDevice(painter),
            std::max(std::hypot(t.m11(), t.m12()), 1e-3));
  PlotPainter::draw(painter, plot, area,
                    static_cast<long long>(m_matrix.rows) * m_matrix.cols > 256 * 256);
  m_lastPlotArea =
      plot.axisRectCount() ? QRectF(plot.axisRect()->rect()).translated(area.topLeft()) : QRectF();
}

QPointF HeatmapView::lastCellCenter(int query, int key) const {
  if (m_matrix.rows == 0 || m_matrix.cols == 0) return {};
  return {m_lastPlotArea.left() + (key + 0.5) * m_lastPlotArea.width() / m_matrix.cols,
          m_lastPlotArea.top() + (query + 0.5) * m_lastPlotArea.height() / m_matrix.rows};
}

QString HeatmapView::cellText(int query, int key) const {
  if (query < 0 || key < 0 || query >= m_matrix.rows || key >= m_matrix.cols) return {};
  const float v = m_matrix.cell(query, key);
  // NaN is how HeadMatrix keeps masked (−inf) scores.
  const QString value =
      std::isnan(v) ? QStringLiteral("−∞ (masked)") : MatrixPainter::formatValue(v);
  // Positions tell repeated tokens apart ("the" at 2 and at 9).
  return QStringLiteral("query '%1' (%2) → key '%3' (%4): %5")
      .arg(m_matrix.rowTexts.value(query), m_matrix.rowPositions(query),
           m_matrix.colTexts.value(key), m_matrix.colPositions(key), value);
}

bool HeatmapView::cellAt(const QPointF& pos, int* query, int* key) const {
  if (!m_plot->axisRectCount() || m_matrix.rows == 0) return false;
  QCPAxisRect* rect = m_plot->axisRect();
  if (!rect->rect().contains(pos.toPoint())) return false;
  *key = static_cast<int>(std::lround(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
  *query = static_cast<int>(std::lround(rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
  return *key >= 0 && *key < m_matrix.cols && *query >= 0 && *query < m_matrix.rows;
}

void HeatmapView::onMouseMove(QMouseEvent* event) {
  int q = 0, k = 0;
  if (!(event->buttons() & Qt::LeftButton) && cellAt(event->position(), &q, &k)) {
    QToolTip::showText(event->globalPosition().toPoint(), cellText(q, k), m_plot);
  } else {
    QToolTip::hideText();
  }
}

void HeatmapView::onMousePress(QMouseEvent* event) { m_pressPos = event->position(); }

void HeatmapView::onMouseRelease(QMouseEvent* event) {
  if (std::exchange(m_doubleClicked, false)) return;
  // A click, not the end of a drag, pins (or unpins) the row under the mouse.
  if ((event->position() - m_pressPos).manhattanLength() > 4) return;
  int q = 0, k = 0;
  if (event->button() != Qt::LeftButton || !cellAt(event->position(), &q, &k)) return;
  // Ctrl adds a query to the selection (or takes it out), Shift selects a range of them.
  ViewState edited = viewState();
  edited.clickQuery(m_matrix.rowTokens[static_cast<std::size_t>(q)],
                    event->modifiers() & Qt::ControlModifier,
                    event->modifiers() & Qt::ShiftModifier);
  Q_EMIT viewStateEdited(edited);
}

}  // namespace attnscope::render
