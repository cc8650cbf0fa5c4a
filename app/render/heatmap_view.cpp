// SPDX-License-Identifier: GPL-3.0-or-later
#include "heatmap_view.h"

#include <QFontMetricsF>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
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

// The cells of one head. QCPColorMap would draw one bitmap into every device; this draws the
// cells through MatrixPainter, so SVG and PDF exports get one vector rectangle per cell (up to
// MatrixPainter::kMaxVectorCells). On screen and in PNGs it colours only what is visible, and when
// there are more cells than pixels it max-pools them first (each pixel the largest of its cells),
// so drawing costs O(visible cells) reads and O(pixels) colours, not a T × T bitmap scaled down.
class CellMap final : public QCPColorMap {
 public:
  CellMap(QCPAxis* key, QCPAxis* value, const HeadMatrix& matrix, const Palette& palette, double lo,
          double hi, bool vector, bool logScale, HeatmapView::PooledImage* cache)
      : QCPColorMap(key, value),
        m_matrix(matrix),
        m_palette(palette),
        m_lut(palette.lookupTable(256)),
        m_masked(palette.maskedColor().rgb()),
        m_lo(logScale ? std::log10(lo) : lo),
        m_hi(logScale ? std::log10(hi) : hi),
        m_vector(vector && !matrix.lazy),
        m_log(logScale),
        m_cache(cache) {}

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
    // A lazy (on-demand) matrix recomputes the visible cells: the last image is kept, so that a
    // replot for a pinned row or a tooltip does not recompute the head.
    const HeatmapView::PooledImage key{
        m.lazyGroup, m.lazyLayer, m.lazyItem, m.lazyHead, m.droppedSink, r0,       r1, c0, c1, fx,
        fy,          m_lo,        m_hi,       m_log,      paletteKey(),  QImage(), 0};
    QImage image;
    if (m.lazy && m_cache && m_cache->sameAs(key)) {
      image = m_cache->image;
    } else {
      image = pool(r0, r1, c0, c1, fx, fy, w, h);
      if (m.lazy && m_cache) {
        const int recomputes = m_cache->recomputes;
        *m_cache = key;
        m_cache->image = image;
        m_cache->recomputes = recomputes + 1;
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
  // The cells [r0, r1) × [c0, c1) max-pooled by fy × fx into a w × h image.
  QImage pool(int r0, int r1, int c0, int c1, int fx, int fy, int w, int h) const {
    const HeadMatrix& m = m_matrix;
    QImage image(w, h, QImage::Format_RGB32);
    const double scale = m_hi > m_lo ? 255.0 / (m_hi - m_lo) : 0.0;
    std::vector<float> columns(static_cast<std::size_t>(c1 - c0)),
        best(static_cast<std::size_t>(w)), rows;
    for (int y = 0; y < h; ++y) {
      // Down the block's rows first, a loop the compiler vectorises (maxps: NaN never wins, so
      // masked cells lose to any real value), then across each pixel's columns.
      std::fill(columns.begin(), columns.end(), -std::numeric_limits<float>::infinity());
      float* acc = columns.data();
      const int ya = r0 + y * fy, yb = std::min(r1, r0 + (y + 1) * fy);
      if (m.lazy) {  // this pixel row's matrix rows, recomputed: fy × visible keys
        rows.resize(static_cast<std::size_t>(yb - ya) * (c1 - c0));
        m.block(ya, yb, c0, c1, rows.data());
      }
      for (int r = ya; r < yb; ++r) {
        const float* row = m.lazy ? rows.data() + static_cast<std::size_t>(r - ya) * (c1 - c0)
                                  : m.values.data() + static_cast<std::size_t>(r) * m.cols + c0;
        for (int c = 0; c < c1 - c0; ++c) acc[c] = row[c] > acc[c] ? row[c] : acc[c];
      }
      for (int x = 0; x < w; ++x) {
        float v = -std::numeric_limits<float>::infinity();
        for (int c = x * fx; c < std::min(c1 - c0, (x + 1) * fx); ++c) v = std::max(v, acc[c]);
        best[static_cast<std::size_t>(x)] = v;
      }
      auto* line = reinterpret_cast<unsigned int*>(image.scanLine(y));
      for (int x = 0; x < w; ++x) {
        float v = best[static_cast<std::size_t>(x)];
        // The log scale colours log10(v); 0 and the floor's decades below it take the first
        // colour (log10 of 0 is −inf, clamped like any value under the floor).
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

  const HeadMatrix& m_matrix;  // the view's, alive while the plot that holds this map is
  Palette m_palette;
  QVector<unsigned int> m_lut;
  unsigned int m_masked;
  double m_lo, m_hi;  // log10 of the range with the log scale
  bool m_vector;
  bool m_log;
  HeatmapView::PooledImage* m_cache;  // the view's, for lazy matrices; may be null
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
      // Recomputed when drawn: only the head's labels and range are kept (refilled only for
      // another head, since the range reads every cell once).
      const HeadMatrix& m = m_matrix;
      const bool same =
          m.lazy && m.lazyGroup == &g && m.lazyLayer == s.layer && m.lazyItem == s.item &&
          m.lazyHead == s.head &&
          m.droppedSink == (s.dropSink > 0 && s.dropSink < realKeys(g, s.item) ? s.dropSink : 0);
      if (!same) HeadMatrix::fillLazy(m_matrix, g, s.layer, s.item, s.head, s.dropSink);
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
            devicePixelRatioF());
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
                            bool vector, double pixelScale) const {
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
  const double hi = m.scores ? std::max<double>(m.maxValue, m.minValue + 1e-6)
                             : std::max<double>(m.maxValue, 1e-6);
  const double lo = m.scores ? m.minValue : logScale ? HeadMatrix::logFloor(hi) : 0.0;
  // The map only draws the cells and feeds the colour scale: no QCPColorMapData needed.
  auto* map = new CellMap(x, y, m, palette, lo, hi, vector, logScale, &m_pooled);
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
    caption +=
        QStringLiteral(" · on demand, max-pooled: each pixel %1 × %2 tokens").arg(fy).arg(fx);
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

void HeatmapView::draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool) {
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
