// SPDX-License-Identifier: GPL-3.0-or-later
#include "stats_view.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPointer>
#include <QProgressBar>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QThreadPool>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "attnscope/long_range.h"
#include "head_matrix.h"
#include "matrix_painter.h"
#include "palette.h"
#include "plot_painter.h"
#include "qcustomplot_include.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

// Sorts by the number, shows it rounded.
class NumberItem final : public QTableWidgetItem {
 public:
  NumberItem(double value, int decimals)
      : QTableWidgetItem(MatrixPainter::formatValue(value, decimals)), m_value(value) {
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  bool operator<(const QTableWidgetItem& other) const override {
    const auto* n = dynamic_cast<const NumberItem*>(&other);
    return n ? m_value < n->m_value : QTableWidgetItem::operator<(other);
  }

 private:
  double m_value;
};

// A chart of the view's size in its colours, the value axis with a dotted grid.
void preparePlot(QCustomPlot& plot, const QRectF& rect, const RenderStyle& style) {
  plot.resize(rect.size().toSize());
  plot.setBackground(style.background);
  plot.axisRect()->setBackground(style.background);
  PlotPainter::styleAxis(plot.xAxis, style, 11);
  PlotPainter::styleAxis(plot.yAxis, style, 11);
  plot.yAxis->grid()->setVisible(true);
  plot.yAxis->grid()->setPen(QPen(style.frame, 0, Qt::DotLine));
}

// Cells of attention above which a group recomputed on demand gets its statistics on a pool
// thread in the window (the grid's threshold): a head of T = 8,192 on a 1B model takes ~1 s.
constexpr qint64 kBackgroundCells = qint64(4) << 20;

constexpr double kMinTablePixels = 9;  // the export table's smallest font, in pixels
const char* const kColumns[] = {"layer", "head", "entropy", "distance", "max",
                                "prev",  "diag", "first",   "sink"};
constexpr int kColumnCount = 9;

}  // namespace

/// The painted part of the widget: bar chart and similarity matrix.
class StatsView::Charts final : public QWidget {
 public:
  explicit Charts(StatsView* view) : QWidget(view), m_view(view) { setMinimumSize(240, 200); }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    const RenderStyle style = RenderStyle::forWidget(*this, m_view->viewState());
    painter.fillRect(rect(), style.background);
    m_view->drawCharts(painter, rect(), style);
  }

 private:
  StatsView* m_view;
};

/// What a pool thread and the view share while the profiles are computed.
struct StatsView::Job {
  std::atomic<bool> cancelled{false};
  std::atomic<int> done{0};
  int total = 0;
};

StatsView::StatsView(QWidget* parent) : AttentionView(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  m_statBox = new QComboBox(this);
  m_statBox->addItems(statisticNames());
  top->addWidget(new QLabel(tr("Bar chart of"), this));
  top->addWidget(m_statBox);
  top->addStretch(1);
  // While a pool thread computes the numbers: how far it is.
  m_progress = new QLabel(this);
  m_progress->setObjectName(QStringLiteral("statsProgress"));
  m_progressBar = new QProgressBar(this);
  m_progressBar->setTextVisible(false);
  m_progressBar->setMaximumWidth(220);
  m_progress->hide();
  m_progressBar->hide();
  top->addWidget(m_progress);
  top->addWidget(m_progressBar);
  m_progressTimer = new QTimer(this);
  m_progressTimer->setInterval(150);
  connect(m_progressTimer, &QTimer::timeout, this, &StatsView::updateProgress);
  layout->addLayout(top);
  auto* split = new QSplitter(Qt::Horizontal, this);
  m_split = split;
  // Until the user drags the divider, the table gets the width of its columns (not the
  // splitter's ~220 px default, which left it scrolling sideways on a 1600 px window).
  connect(split, &QSplitter::splitterMoved, this, [this] { m_userSized = true; });
  m_table = new QTableWidget(split);
  m_table->setSortingEnabled(true);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->verticalHeader()->setVisible(false);
  m_charts = new Charts(this);
  split->addWidget(m_table);
  split->addWidget(m_charts);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  connect(m_statBox, qOverload<int>(&QComboBox::currentIndexChanged), this,
          &StatsView::setStatistic);
  // A click (or the arrow keys) selects that head; a double-click also opens it.
  connect(m_table, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    const QTableWidgetItem* l = m_table->item(row, 0);
    const QTableWidgetItem* h = m_table->item(row, 1);
    if (!l || !h) return;
    ViewState s = viewState();
    s.layer = l->text().toInt();
    s.head = h->text().toInt();
    if (s != viewState()) Q_EMIT viewStateEdited(s);
  });
  connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    const QTableWidgetItem* l = m_table->item(row, 0);
    const QTableWidgetItem* h = m_table->item(row, 1);
    if (l && h) Q_EMIT headActivated(l->text().toInt(), h->text().toInt());
  });
}

StatsView::~StatsView() { cancelJob(); }

QStringList StatsView::statisticNames() {
  return {QStringLiteral("entropy (nats)"),
          QStringLiteral("mean distance (tokens)"),
          QStringLiteral("peak weight"),
          QStringLiteral("previous-token score"),
          QStringLiteral("diagonal score"),
          QStringLiteral("first-token score"),
          QStringLiteral("sink share (first %1 tokens)").arg(kSinkTokens),
          QStringLiteral("weight by distance (selected layer)")};
}

double StatsView::statisticOf(const HeadStatistics& s, int index) {
  switch (index) {
    case 1:
      return s.meanDistance;
    case 2:
      return s.maxWeight;
    case 3:
      return s.previousToken;
    case 4:
      return s.diagonal;
    case 5:
      return s.firstToken;
    case 0:
      return s.entropy;
    default:
      return std::nan("");
  }
}

double StatsView::valueOf(int index, int statistic) const {
  const std::size_t i = static_cast<std::size_t>(index);
  if (i >= m_profiles.size()) return std::nan("");
  return statistic == kSinkStatistic ? m_profiles[i].sinkShare
                                     : statisticOf(m_profiles[i].statistics, statistic);
}

std::vector<HeadStatistics> StatsView::statistics() const {
  std::vector<HeadStatistics> out;
  out.reserve(m_profiles.size());
  for (const LongRangeProfile& p : m_profiles) out.push_back(p.statistics);
  return out;
}

std::vector<LongRangeProfile> StatsView::computeProfiles(const AttentionGroup& r, int item,
                                                         const std::atomic<bool>* cancel,
                                                         std::atomic<int>* done) {
  // One pass over each head's rows gives headStatistics' numbers, the sink share and the
  // distance profile, from the stored attention or recomputed a block at a time on demand.
  std::vector<LongRangeProfile> out;
  for (int l = 0; l < r.layers(); ++l)
    for (int h = 0; h < r.heads(); ++h) {
      if (cancel && cancel->load(std::memory_order_relaxed)) return out;
      out.push_back(longRangeProfile(r, l, item, h, kSinkTokens));
      if (done) done->fetch_add(1, std::memory_order_relaxed);
    }
  return out;
}

bool StatsView::computeInBackground(const AttentionGroup& r) const {
  return r.onDemand() && window() && window()->isVisible() &&
         qint64(r.layers()) * r.heads() * r.queries() * r.keys() > kBackgroundCells;
}

void StatsView::cancelJob() {
  if (m_job) m_job->cancelled.store(true);
  m_job.reset();
  if (m_progressTimer) m_progressTimer->stop();
  if (m_progress) {
    m_progress->hide();
    m_progressBar->hide();
  }
}

void StatsView::startInBackground(const AttentionGroup& r, int item) {
  auto job = std::make_shared<Job>();
  job->total = r.layers() * r.heads();
  m_job = job;
  const quint64 generation = m_generation;
  // The QPointer is read on the UI thread only, where the view may be deleted; the job holds the
  // result alive.
  const auto self = std::make_shared<QPointer<StatsView>>(this);
  QThreadPool::globalInstance()->start(
      [self, generation, job, shown = result(), group = r.name, item] {
        std::vector<LongRangeProfile> profiles =
            computeProfiles(weightsOf(*shown, group), item, &job->cancelled, &job->done);
        if (job->cancelled.load()) return;  // a newer result, group or item: never installed
        QMetaObject::invokeMethod(
            qApp,
            [self, generation, profiles = std::move(profiles)]() mutable {
              StatsView* view = *self;
              if (!view || generation != view->m_generation) return;
              view->install(std::move(profiles));
            },
            Qt::QueuedConnection);
      });
  updateProgress();
  m_progress->show();
  m_progressBar->show();
  m_progressTimer->start();
}

void StatsView::install(std::vector<LongRangeProfile> profiles) {
  cancelJob();  // done: the progress goes
  m_profiles = std::move(profiles);
  fillTable();
  selectCurrentRow();
  m_charts->update();
}

QString StatsView::progressText() const {
  if (!m_job) return {};
  return QStringLiteral("Computing statistics… %1 / %2 heads")
      .arg(m_job->done.load())
      .arg(m_job->total);
}

void StatsView::updateProgress() {
  if (!m_job) return;
  m_progress->setText(progressText());
  m_progressBar->setRange(0, m_job->total);
  m_progressBar->setValue(m_job->done.load());
  m_charts->update();
}

void StatsView::setStatistic(int index) {
  m_statistic = std::clamp(index, 0, static_cast<int>(statisticNames().size()) - 1);
  if (m_statBox->currentIndex() != m_statistic) {
    const QSignalBlocker blocker(m_statBox);
    m_statBox->setCurrentIndex(m_statistic);
  }
  m_charts->update();
  // The choice is the document's (saved in sessions, used by exports): tell it.
  ViewState s = viewState();
  s.statistic = m_statistic == 0 ? QString() : statisticKeys().value(m_statistic);
  if (s != viewState()) Q_EMIT viewStateEdited(s);
}

void StatsView::rebuild(Change change) {
  const ViewState& state = viewState();
  m_statistic = std::max(0, statisticIndex(state.statistic));
  if (m_statBox->currentIndex() != m_statistic) {
    const QSignalBlocker blocker(m_statBox);
    m_statBox->setCurrentIndex(m_statistic);
  }
  const int item = state.item;
  const bool valid = result() && item >= 0 && item < weightsOf(*result(), state.group).batch();
  bool changed = true;
  if (!valid) {
    cancelJob();
    ++m_generation;
    m_profiles.clear();
    m_similarity.clear();
    m_computedItem = -1;
  } else if (change == Change::Result || m_computedItem != item ||
             m_computedGroup != weightsOf(*result(), state.group).name) {
    // The numbers depend on the result, the group and the item alone, and the similarity matrix
    // is costly (pairs × T²): a new head selection only moves the highlight.
    const AttentionGroup& r = weightsOf(*result(), state.group);
    cancelJob();  // a running job for older numbers stops within one head
    ++m_generation;
    m_profiles.clear();
    // The similarity of every pair of heads (pairs × T²) is left out on demand.
    m_similarity = r.onDemand() ? std::vector<double>() : headSimilarity(r, item);
    if (computeInBackground(r))
      startInBackground(r, item);  // meanwhile no numbers, the progress instead
    else
      m_profiles = computeProfiles(r, item);
    m_computedItem = item;
    m_computedGroup = r.name;
  } else {
    changed = false;
  }
  // Refilled only for new numbers, so a selection keeps the user's sorting and scrolling.
  if (changed) fillTable();
  selectCurrentRow();
  m_charts->update();
}

void StatsView::selectCurrentRow() {
  const ViewState& state = viewState();
  const QSignalBlocker blocker(m_table);
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const QTableWidgetItem* l = m_table->item(row, 0);
    const QTableWidgetItem* h = m_table->item(row, 1);
    if (l && h && l->text().toInt() == state.layer && h->text().toInt() == state.head) {
      m_table->setCurrentCell(row, m_table->currentColumn() >= 0 ? m_table->currentColumn() : 0);
      m_table->selectRow(row);
      return;
    }
  }
  m_table->clearSelection();
}

QString StatsView::headName(int index) const {
  const int heads = result() ? std::max(1, weightsOf(*result(), viewState().group).heads()) : 1;
  return QStringLiteral("L%1H%2").arg(index / heads).arg(index % heads);
}

void StatsView::fillTable() {
  const QSignalBlocker blocker(m_table);
  m_table->setSortingEnabled(false);
  m_table->clear();
  m_table->setColumnCount(kColumnCount);
  QStringList headers;
  for (const char* c : kColumns) headers << QString::fromLatin1(c);
  m_table->setHorizontalHeaderLabels(headers);
  m_table->setRowCount(static_cast<int>(m_profiles.size()));
  const int heads = result() ? weightsOf(*result(), viewState().group).heads() : 1;
  for (int i = 0; i < static_cast<int>(m_profiles.size()); ++i) {
    auto* layer = new NumberItem(i / heads, 0);
    auto* head = new NumberItem(i % heads, 0);
    m_table->setItem(i, 0, layer);
    m_table->setItem(i, 1, head);
    for (int s = 0; s < kColumnCount - 2; ++s)
      m_table->setItem(i, 2 + s, new NumberItem(valueOf(i, s), 3));
  }
  m_table->setSortingEnabled(true);
  m_table->resizeColumnsToContents();
  fitTable();
}

void StatsView::fitTable() {
  if (m_userSized || !m_split || m_split->width() <= 0) return;
  int needed = 2 * m_table->frameWidth() + m_table->verticalScrollBar()->sizeHint().width() + 4;
  for (int c = 0; c < m_table->columnCount(); ++c) needed += m_table->columnWidth(c);
  const int total = m_split->width();
  const int table = std::min(needed, total * 55 / 100);
  m_split->setSizes({table, std::max(0, total - table)});
}

void StatsView::resizeEvent(QResizeEvent* event) {
  AttentionView::resizeEvent(event);
  fitTable();
}

void StatsView::drawBarChart(QPainter& painter, const QRectF& rect,
                             const RenderStyle& style) const {
  if (m_statistic == kDistanceStatistic) {
    drawDistanceProfile(painter, rect, style);
    return;
  }
  const ViewState& state = viewState();
  QCustomPlot plot;
  preparePlot(plot, rect, style);
  QCPAxis* x = plot.xAxis;
  QCPAxis* y = plot.yAxis;
  const int n = static_cast<int>(m_profiles.size());
  QVector<double> keys, values;
  double top = 0;
  for (int i = 0; i < n; ++i) {
    keys << i;
    values << valueOf(i, m_statistic);
    top = std::max(top, values.back());
  }
  const Palette palette = Palette::named(state.palette);
  auto* bars = new QCPBars(x, y);
  bars->setData(keys, values, true);
  bars->setWidth(0.75);
  bars->setPen(Qt::NoPen);
  bars->setBrush(palette.colorAt(0.35));
  // The selected head stands out in the accent colour.
  const int selected =
      result() ? state.layer * weightsOf(*result(), state.group).heads() + state.head : -1;
  if (selected >= 0 && selected < n) {
    auto* mark = new QCPBars(x, y);
    mark->setData(QVector<double>{double(selected)}, QVector<double>{values[selected]}, true);
    mark->setWidth(0.75);
    mark->setPen(Qt::NoPen);
    mark->setBrush(style.accent);
  }
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const QFontMetricsF fm(style.font(11));
  const double plotWidth = std::max(40.0, rect.width() - 80);
  const bool rotate =
      fm.horizontalAdvance(QStringLiteral("L00H00")) + 6 > plotWidth / std::max(1, n);
  const int step = std::max(1, static_cast<int>(std::ceil((rotate ? fm.height() * 1.1 : 1.0) /
                                                          (plotWidth / std::max(1, n)))));
  for (int i = 0; i < n; i += step) ticker->addTick(i, headName(i));
  x->setTicker(ticker);
  x->setTickLabelRotation(rotate ? -90 : 0);
  x->setRange(-0.6, n - 0.4);
  x->setLabel(QStringLiteral("head"));
  y->setRange(0, top > 0 ? top * 1.08 : 1);
  y->setLabel(statisticNames().value(m_statistic));
  PlotPainter::draw(painter, plot, rect);
}

void StatsView::drawDistanceProfile(QPainter& painter, const QRectF& rect,
                                    const RenderStyle& style) const {
  const ViewState& state = viewState();
  const int heads = result() ? std::max(1, weightsOf(*result(), state.group).heads()) : 1;
  const int layer = state.layer;
  QCustomPlot plot;
  preparePlot(plot, rect, style);
  QCPAxis* x = plot.xAxis;
  QCPAxis* y = plot.yAxis;
  const Palette palette = Palette::named(state.palette);
  std::size_t buckets = 0;
  double top = 0;
  for (int h = 0; h < heads; ++h) {
    const std::size_t i = static_cast<std::size_t>(layer) * heads + h;
    if (i >= m_profiles.size()) break;
    const std::vector<double>& mass = m_profiles[i].distanceMass;
    buckets = std::max(buckets, mass.size());
    QVector<double> keys, values;
    for (std::size_t b = 0; b < mass.size(); ++b) {
      if (!std::isfinite(mass[b])) continue;
      keys << double(b);
      values << mass[b];
      top = std::max(top, mass[b]);
    }
    QCPGraph* g = plot.addGraph(x, y);
    g->setData(keys, values, true);
    g->setName(QStringLiteral("H%1").arg(h));
    const bool selected = h == state.head;
    QColor c = selected ? style.accent : palette.colorAt(0.15 + 0.7 * h / std::max(1, heads - 1));
    if (!selected) c.setAlpha(150);
    g->setPen(QPen(c, selected ? 2.6 : 1.2));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, c, selected ? 6 : 3));
  }
  // Bucket b holds the distances [2^b − 1, 2^(b+1) − 1): "0" (the token itself), "1–2", "3–6", ….
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (std::size_t b = 0; b < buckets; ++b) {
    const long from = (1L << b) - 1, to = (1L << (b + 1)) - 2;
    ticker->addTick(double(b),
                    from == to ? QString::number(from) : QStringLiteral("%1–%2").arg(from).arg(to));
  }
  x->setTicker(ticker);
  x->setTickLabelRotation(buckets > 8 ? -60 : 0);
  x->setRange(-0.3, std::max<double>(1, double(buckets) - 0.7));
  x->setLabel(QStringLiteral("tokens back (or ahead) from the query"));
  y->setRange(0, top > 0 ? top * 1.08 : 1);
  // Which line is which head, while there are few enough to name (a 1B model has 32 a layer) and
  // room beside the lines (in a small chart the legend would cover them); else the axis says
  // which line is the selected head's.
  const bool legend = heads <= 16 && rect.width() >= 520 && rect.height() >= 260;
  y->setLabel(
      legend ? QStringLiteral("mean weight, layer %1").arg(layer)
             : QStringLiteral("mean weight, layer %1 (head %2 bold)").arg(layer).arg(state.head));
  if (legend) {
    plot.legend->setVisible(true);
    plot.legend->setFont(style.font(10));
    plot.legend->setTextColor(style.text);
    plot.legend->setBrush(style.background);
    plot.legend->setBorderPen(QPen(style.frame, 0));
    plot.axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  }
  PlotPainter::draw(painter, plot, rect);
}

void StatsView::drawSimilarity(QPainter& painter, const QRectF& rect,
                               const RenderStyle& style) const {
  const int n = static_cast<int>(m_profiles.size());
  if (n > 0 && m_similarity.empty() && result() &&
      weightsOf(*result(), viewState().group).onDemand()) {
    painter.setPen(style.muted);
    painter.setFont(style.font(11));
    painter.drawText(rect, Qt::AlignCenter | Qt::TextWordWrap,
                     QStringLiteral("Head similarity is left out: the attention is recomputed on "
                                    "demand, and comparing every pair of heads would recompute "
                                    "each head once per pair"));
    return;
  }
  if (n == 0 || m_similarity.size() != static_cast<std::size_t>(n) * n) return;
  QStringList labels;
  for (int i = 0; i < n; ++i) labels << headName(i);
  const QFont font = style.font(11);
  const QFontMetricsF fm(font);
  const double heading = fm.height() * 1.8;
  const double labelW = MatrixPainter::labelWidth(labels, font) + 8;
  const double barSpace = MatrixPainter::colorBarWidth(style, 12) + 16;
  const double side = std::max(
      10.0, std::min(rect.width() - labelW - barSpace - 8, rect.height() - heading - labelW - 4));
  const QRectF cells(rect.left() + labelW, rect.top() + heading, side, side);
  std::vector<float> values(m_similarity.begin(), m_similarity.end());
  const Palette palette = Palette::named(viewState().palette);
  MatrixPainter::drawCells(painter, cells,
                           MatrixPainter::colorize(values.data(), n, n, palette, 0, 1));
  painter.setPen(QPen(style.frame, 0));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(cells);
  MatrixPainter::drawRowLabels(painter, cells, labels, font, style.text);
  MatrixPainter::drawColumnLabels(painter, cells, labels, font, style.text);
  // Measured: the whole title where it fits, a shorter one where not (half of a 1024-pixel
  // window), and elided only when even that does not.
  const QFont titleFont = style.font(12, true);
  const QFontMetricsF tfm(titleFont);
  QString title = QStringLiteral("Head similarity: 1 − mean Jensen–Shannon distance");
  if (tfm.horizontalAdvance(title) > rect.width() - 4)
    title = QStringLiteral("Head similarity (1 − JS distance)");
  title = tfm.elidedText(title, Qt::ElideRight, rect.width() - 4);
  painter.setFont(titleFont);
  painter.setPen(style.text);
  painter.drawText(QRectF(rect.left(), rect.top(), rect.width(), heading),
                   Qt::AlignLeft | Qt::AlignVCenter, title);
  MatrixPainter::drawColorBar(painter,
                              QRectF(cells.right() + 12, cells.top(), 12, std::min(side, 300.0)),
                              palette, 0, 1, style, QStringLiteral("similarity"));
}

void StatsView::drawCharts(QPainter& painter, const QRectF& rect, const RenderStyle& style) const {
  if (m_profiles.empty()) {
    style.drawMessage(painter, rect,
                      computing() ? progressText()
                      : result()  ? QStringLiteral("Batch item out of range")
                                  : QStringLiteral("No result yet"));
    return;
  }
  // Side by side when wide, stacked when tall.
  if (rect.width() > rect.height() * 1.6) {
    const double half = rect.width() / 2;
    drawBarChart(painter, QRectF(rect.left(), rect.top(), half - 8, rect.height()), style);
    drawSimilarity(painter, QRectF(rect.left() + half + 8, rect.top(), half - 8, rect.height()),
                   style);
  } else {
    const double half = rect.height() * 0.45;
    drawBarChart(painter, QRectF(rect.left(), rect.top(), rect.width(), half), style);
    drawSimilarity(
        painter,
        QRectF(rect.left(), rect.top() + half + 10, rect.width(), rect.height() - half - 10),
        style);
  }
}

void StatsView::drawTable(QPainter& painter, const QRectF& rect, const RenderStyle& style) const {
  // Columns as wide as their header or a value; the font shrinks when the table would not fit.
  const int columns = kColumnCount;
  double pixels = 11;
  double widths[columns];
  for (int attempt = 0; attempt < 6; ++attempt) {
    const QFontMetricsF bm(style.font(pixels, true));
    const double value = bm.horizontalAdvance(QStringLiteral("00.000"));
    double total = 0;
    for (int c = 0; c < columns; ++c) {
      widths[c] = std::max(value, bm.horizontalAdvance(QString::fromLatin1(kColumns[c]))) + 10;
      total += widths[c];
    }
    if (total <= rect.width()) break;
    pixels *= rect.width() / total * 0.98;
  }
  // Never below a readable size: a narrow page shows fewer columns instead.
  pixels = std::max(pixels, kMinTablePixels);
  int shownColumns = 0;
  for (double x = 0; shownColumns < columns && x + widths[shownColumns] <= rect.width() + 0.5;)
    x += widths[shownColumns++];
  shownColumns = std::max(shownColumns, 2);
  double tableWidth = 0;  // the rule and the selected row's band span the columns shown
  for (int c = 0; c < shownColumns; ++c) tableWidth += widths[c];
  tableWidth = std::min(tableWidth, rect.width());
  const QFont font = style.font(pixels), bold = style.font(pixels, true);
  const QFontMetricsF fm(font);
  const double rowH = fm.height() * 1.35;
  const int heads = weightsOf(*result(), viewState().group).heads();
  const QString note =
      QStringLiteral(
          "Means over real queries of item %1. entropy in nats; distance: Σ a·|q−k| "
          "in tokens; max: each query's largest weight; prev, diag, first, sink: mean "
          "weight on the previous token, the query itself, the first token and the "
          "first %2 tokens.")
          .arg(viewState().item)
          .arg(kSinkTokens);
  // The note below the rows takes what its wrapped lines need; the rows get the rest (the
  // header and a "… more heads" line among them), so the note never runs into what is drawn
  // below the table.
  const double noteHeight =
      fm.boundingRect(QRectF(0, 0, rect.width(), 1e6), Qt::AlignLeft | Qt::TextWordWrap, note)
          .height();
  const int fit = std::max(1, static_cast<int>((rect.height() - noteHeight - 4) / rowH) - 2);
  const int n = static_cast<int>(m_profiles.size());
  const int shown = n > fit ? fit - 1 : n;
  auto cellRect = [&](int row, int col) {
    double x = rect.left();
    for (int c = 0; c < col; ++c) x += widths[c];
    return QRectF(x, rect.top() + row * rowH, widths[col] - 6, rowH);
  };
  painter.setFont(bold);
  painter.setPen(style.text);
  for (int c = 0; c < shownColumns; ++c)
    painter.drawText(cellRect(0, c), Qt::AlignRight | Qt::AlignVCenter,
                     QString::fromLatin1(kColumns[c]));
  painter.setPen(QPen(style.frame, 0));
  painter.drawLine(QPointF(rect.left(), rect.top() + rowH),
                   QPointF(rect.left() + tableWidth, rect.top() + rowH));
  painter.setFont(font);
  const int selected = viewState().layer * heads + viewState().head;
  for (int i = 0; i < shown; ++i) {
    if (i == selected) {
      QColor band = style.accent;
      band.setAlpha(40);
      painter.fillRect(QRectF(rect.left(), rect.top() + (i + 1) * rowH, tableWidth, rowH), band);
    }
    painter.setPen(style.text);
    painter.drawText(cellRect(i + 1, 0), Qt::AlignRight | Qt::AlignVCenter,
                     QString::number(i / heads));
    painter.drawText(cellRect(i + 1, 1), Qt::AlignRight | Qt::AlignVCenter,
                     QString::number(i % heads));
    for (int s = 0; s < shownColumns - 2; ++s) {
      painter.drawText(cellRect(i + 1, 2 + s), Qt::AlignRight | Qt::AlignVCenter,
                       MatrixPainter::formatValue(valueOf(i, s), 3));
    }
  }
  if (shown < n) {
    painter.setPen(style.muted);
    painter.drawText(QRectF(rect.left(), rect.top() + (shown + 1) * rowH, rect.width(), rowH),
                     Qt::AlignLeft | Qt::AlignVCenter,
                     QStringLiteral("… %1 more heads").arg(n - shown));
  }
  painter.setPen(style.muted);
  painter.drawText(
      QRectF(rect.left(), rect.top() + (std::min(shown, n) + (shown < n ? 2 : 1)) * rowH + 4,
             rect.width(), noteHeight + 2),
      Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, note);
}

void StatsView::draw(QPainter& painter, const QRect& drawing, const RenderStyle& style, bool) {
  const QRect area = drawing.adjusted(8, 4, -8, -8);
  // An export needs the finished numbers: computed here when a pool thread has not yet.
  if (computing() && result()) {
    const int item = viewState().item;
    cancelJob();
    ++m_generation;
    m_profiles = computeProfiles(weightsOf(*result(), viewState().group), item);
    fillTable();
    selectCurrentRow();
    m_charts->update();
  }
  if (m_profiles.empty()) {
    drawCharts(painter, area, style);
    return;
  }
  // Table on the left, charts stacked on the right.
  // The table gets its natural width (a column per statistic, of a value or header), up to half the
  // drawing.
  const QFontMetricsF bm(style.font(11, true));
  const double natural = kColumnCount * (bm.horizontalAdvance(QStringLiteral("distance")) + 10);
  if (area.width() * 0.5 < natural) {
    // Too narrow for both side by side at a readable size (a 1024-pixel window's view): the
    // table across the top, the charts below it.
    const double tableHeight = area.height() * 0.45;
    drawTable(painter, QRectF(area.left(), area.top(), area.width(), tableHeight), style);
    drawCharts(painter,
               QRectF(area.left(), area.top() + tableHeight + 12, area.width(),
                      area.height() - tableHeight - 12),
               style);
    return;
  }
  const double tableWidth = std::min(area.width() * 0.5, natural);
  drawTable(painter, QRectF(area.left(), area.top(), tableWidth, area.height()), style);
  const QRectF charts(area.left() + tableWidth + 16, area.top(), area.width() - tableWidth - 16,
                      area.height());
  const double half = charts.height() * 0.42;
  drawBarChart(painter, QRectF(charts.left(), charts.top(), charts.width(), half), style);
  drawSimilarity(
      painter,
      QRectF(charts.left(), charts.top() + half + 12, charts.width(), charts.height() - half - 12),
      style);
}

}  // namespace attnscope::render
