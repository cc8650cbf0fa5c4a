// SPDX-License-Identifier: GPL-3.0-or-later
#include "heatmap_view.h"

#include <QFontMetricsF>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <utility>

#include "matrix_painter.h"
#include "palette.h"
#include "plot_painter.h"
#include "qcustomplot_include.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

constexpr int kMaxAnnotated = 16;  // write values into the cells up to this many tokens

bool validSelection(const AttentionResult& r, const ViewState& s) {
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
// MatrixPainter::kMaxVectorCells) and the screen gets the same nearest-neighbour bitmap as before.
class CellMap final : public QCPColorMap {
 public:
  CellMap(QCPAxis* key, QCPAxis* value, QImage cells, bool vector)
      : QCPColorMap(key, value), m_cells(std::move(cells)), m_vector(vector) {}

 protected:
  void draw(QCPPainter* painter) override {
    const QRectF target = QRectF(coordsToPixels(-0.5, -0.5),
                                 coordsToPixels(m_cells.width() - 0.5, m_cells.height() - 0.5))
                              .normalized();
    if (m_vector) {
      MatrixPainter::drawCells(*painter, target, m_cells);
    } else {
      painter->save();
      painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
      painter->drawImage(target, m_cells);
      painter->restore();
    }
  }

 private:
  QImage m_cells;  // [rows, cols] one pixel per cell
  bool m_vector;
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

void HeatmapView::setResult(ResultPtr result) {
  m_result = std::move(result);
  rebuild();
}

void HeatmapView::setViewState(const ViewState& state) {
  if (state == m_state) return;
  m_state = state;
  rebuild();
}

void HeatmapView::resizeEvent(QResizeEvent* event) {
  AttentionView::resizeEvent(event);
  rebuild();  // label thinning and cell text depend on the size
}

void HeatmapView::rebuild() {
  m_matrix = HeadMatrix();
  if (m_result && validSelection(*m_result, m_state)) {
    m_matrix =
        HeadMatrix::of(m_result->group(m_state.group), m_state.layer, m_state.item, m_state.head,
                       m_state.showScores, m_state.hideSpecial, m_state.mergeWords);
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
  buildPlot(*m_plot, RenderStyle::forWidget(*this, m_state), m_plot->size(), false);
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
                            bool vector) const {
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
  x->setProperty("cols", m.cols);
  y->setProperty("rows", m.rows);
  if (m.rows == 0 || m.cols == 0 || m.missing) {
    x->setVisible(false);
    y->setVisible(false);
    auto* text = new QCPItemText(&plot);
    text->position->setType(QCPItemPosition::ptViewportRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(m.missing ? QStringLiteral("Layer %1's attention was not kept (memory limit): "
                                             "it is computed when you open it")
                                  .arg(m_state.layer)
                  : m_result ? QStringLiteral("Selection out of range")
                             : QStringLiteral("No result yet"));
    text->setColor(style.muted);
    text->setFont(style.font(14));
    return;
  }

  // Thin labels so they never overlap; the estimate of the plot area is refined by QCustomPlot's
  // layout, but it only decides how many labels fit.
  const QFont tickFont = style.font(12);
  const QFontMetricsF fm(tickFont);
  const double rowLabelWidth = MatrixPainter::labelWidth(m.rowLabels, tickFont);
  const double colLabelWidth = MatrixPainter::labelWidth(m.colLabels, tickFont);
  const double plotWidth = std::max(50.0, size.width() - rowLabelWidth - 160.0);
  const double cellWidth = plotWidth / m.cols;
  const bool rotate = colLabelWidth + 6 > cellWidth;
  const double plotHeight =
      std::max(50.0, size.height() - (rotate ? colLabelWidth : fm.height()) - 60.0);
  const int rowStep =
      std::max(1, static_cast<int>(std::ceil(fm.height() * 1.05 * m.rows / plotHeight)));
  const int colStep =
      rotate ? std::max(1, static_cast<int>(std::ceil(fm.height() * 1.05 / cellWidth))) : 1;
  x->setTicker(tokenTicker(m.colLabels, colStep));
  y->setTicker(tokenTicker(m.rowLabels, rowStep));
  x->setTickLabelRotation(rotate ? -90 : 0);
  x->setRange(-0.5, m.cols - 0.5);
  y->setRange(-0.5, m.rows - 0.5);
  y->setRangeReversed(true);  // query 0 at the top, like the matrix
  x->setLabel(QStringLiteral("key"));
  y->setLabel(QStringLiteral("query"));

  const Palette palette = Palette::named(m_state.palette);
  // Weights: [0, max] so zero is the palette's first colour; scores: their finite range.
  const double lo = m.scores ? m.minValue : 0.0;
  const double hi = m.scores ? std::max<double>(m.maxValue, m.minValue + 1e-6)
                             : std::max<double>(m.maxValue, 1e-6);
  // The map only draws the cells and feeds the colour scale: no QCPColorMapData needed.
  auto* map = new CellMap(x, y, MatrixPainter::colorize(m, palette, lo, hi), vector);
  map->setGradient(gradientOf(palette));
  map->setDataRange(QCPRange(lo, hi));

  auto* scale = new QCPColorScale(&plot);
  plot.plotLayout()->addElement(0, 1, scale);
  scale->setType(QCPAxis::atRight);
  scale->setGradient(map->gradient());
  scale->setDataRange(map->dataRange());
  scale->setBarWidth(14);
  PlotPainter::styleAxis(scale->axis(), style);
  QString caption = valueCaption(m);
  if (m.hiddenSpecial > 0)
    caption += QStringLiteral(" · ") + hiddenSpecialNote(m.scores || !m.distribution);
  if (m.mergedWords) caption += QStringLiteral(" · ") + mergedWordsNote(m.scores);
  scale->axis()->setLabel(caption);
  map->setColorScale(scale);
  auto* group = new QCPMarginGroup(&plot);
  rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);

  if (m.rows <= kMaxAnnotated && m.cols <= kMaxAnnotated) {
    const double cellPixels = std::min(cellWidth, plotHeight / m.rows);
    const double px = std::min(13.0, cellPixels / 3.3);
    if (px >= 6) {
      QFont f = style.font(px / style.fontScale);
      for (int q = 0; q < m.rows; ++q) {
        for (int k = 0; k < m.cols; ++k) {
          const float v = m.at(q, k);
          if (!m.scores && v == 0.0f)
            continue;  // causal zeros: the colour says it, text would clutter
          auto* text = new QCPItemText(&plot);
          text->position->setAxes(x, y);
          text->position->setCoords(k, q);
          text->setText(std::isfinite(v) ? MatrixPainter::formatValue(v, 2) : QStringLiteral("−∞"));
          text->setFont(f);
          const QColor c =
              std::isfinite(v) ? palette.colorAt((v - lo) / (hi - lo)) : palette.maskedColor();
          text->setColor(c.lightnessF() > 0.55 ? QColor(20, 20, 20) : QColor(250, 250, 250));
          text->setClipToAxisRect(true);
        }
      }
    }
  }
  // Sentence pairs: a line where the second segment begins, across the whole matrix.
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
  // The selected queries are outlined, the last one clicked more strongly.
  const int pinnedRow = m.rowOfToken(m_state.pinnedQuery);
  const std::vector<int> selected = m.rowsOfTokens(m_state.selectedQueries());
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
  const bool sum = m_state.aggregate == QueryAggregate::Sum;
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

void HeatmapView::renderTo(QPainter& painter, const QRect& rect, const QString& title) {
  const RenderStyle style = painter.device() == this ? RenderStyle::forWidget(*this, m_state)
                                                     : RenderStyle::forExport(m_state);
  painter.save();
  painter.fillRect(rect, style.background);
  const QRect area = style.drawTitle(painter, rect, title);
  // A private plot: exporting must not disturb the zoom of the one on screen.
  QCustomPlot plot;
  plot.resize(area.size());
  buildPlot(plot, style, area.size(), MatrixPainter::isVectorDevice(painter));
  PlotPainter::draw(painter, plot, area);
  m_lastPlotArea =
      plot.axisRectCount() ? QRectF(plot.axisRect()->rect()).translated(area.topLeft()) : QRectF();
  painter.restore();
}

QPointF HeatmapView::lastCellCenter(int query, int key) const {
  if (m_matrix.rows == 0 || m_matrix.cols == 0) return {};
  return {m_lastPlotArea.left() + (key + 0.5) * m_lastPlotArea.width() / m_matrix.cols,
          m_lastPlotArea.top() + (query + 0.5) * m_lastPlotArea.height() / m_matrix.rows};
}

QString HeatmapView::cellText(int query, int key) const {
  if (query < 0 || key < 0 || query >= m_matrix.rows || key >= m_matrix.cols) return {};
  const float v = m_matrix.at(query, key);
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
  ViewState edited = m_state;
  edited.clickQuery(m_matrix.rowTokens[static_cast<std::size_t>(q)],
                    event->modifiers() & Qt::ControlModifier,
                    event->modifiers() & Qt::ShiftModifier);
  Q_EMIT viewStateEdited(edited);
}

}  // namespace attnscope::render
