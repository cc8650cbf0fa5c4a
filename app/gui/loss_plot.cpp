// SPDX-License-Identifier: GPL-3.0-or-later
#include "loss_plot.h"

#include <QEvent>
#include <QVBoxLayout>

#include <cmath>

#include "qcustomplot_include.h"

namespace attnscope::gui {

namespace {
enum Graph { kTrain = 0, kValidation = 1, kBaseline = 2 };
}  // namespace

LossPlot::LossPlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_plot);
  setMinimumHeight(180);

  QCPGraph* train = m_plot->addGraph();
  train->setName(tr("train"));
  train->setPen(QPen(QColor(31, 119, 180), 1.5));
  QCPGraph* val = m_plot->addGraph();
  val->setName(tr("validation"));
  val->setPen(QPen(QColor(255, 127, 14), 2));
  val->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
  QCPGraph* baseline = m_plot->addGraph();
  baseline->setName(tr("uniform guess, log V"));
  baseline->setPen(QPen(Qt::gray, 1.2, Qt::DashLine));
  baseline->setVisible(false);
  baseline->removeFromLegend();

  m_plot->xAxis->setLabel(tr("step"));
  m_plot->yAxis->setLabel(tr("loss (nats/char)"));
  m_plot->legend->setVisible(true);
  m_plot->legend->setFont(font());
  m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignVCenter | Qt::AlignRight);
  applyPalette();
  clear();
}

void LossPlot::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange)
    applyPalette();
}

// QCustomPlot paints white with black axes whatever the theme: give it the palette's colours.
void LossPlot::applyPalette() {
  const QPalette& p = palette();
  const QColor base = p.color(QPalette::Base), text = p.color(QPalette::Text),
               frame = p.color(QPalette::Mid);
  m_plot->setBackground(base);
  m_plot->axisRect()->setBackground(base);
  for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis, m_plot->xAxis2, m_plot->yAxis2}) {
    axis->setBasePen(QPen(frame, 1));
    axis->setTickPen(QPen(frame, 1));
    axis->setSubTickPen(QPen(frame, 1));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(frame, 0, Qt::DotLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
  }
  m_plot->legend->setBrush(base);
  m_plot->legend->setBorderPen(QPen(frame, 1));
  m_plot->legend->setTextColor(text);
  m_plot->graph(kBaseline)->setPen(QPen(p.color(QPalette::PlaceholderText), 1.2, Qt::DashLine));
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LossPlot::clear() {
  for (int g = 0; g < m_plot->graphCount(); ++g) m_plot->graph(g)->data()->clear();
  m_baseline = 0;
  m_steps = 1;
  rescale();
}

void LossPlot::addTrainLoss(int step, double loss) {
  if (!std::isfinite(loss)) return;
  m_plot->graph(kTrain)->addData(step, loss);
  rescale();
}

void LossPlot::addValidationLoss(int step, double loss) {
  if (!std::isfinite(loss)) return;
  m_plot->graph(kValidation)->addData(step, loss);
  rescale();
}

void LossPlot::setBaseline(double nats, int steps) {
  m_baseline = nats;
  m_steps = std::max(1, steps);
  QCPGraph* g = m_plot->graph(kBaseline);
  g->setData({0.0, double(m_steps)}, {nats, nats});
  rescale();
}

void LossPlot::setBaselineVisible(bool visible) {
  QCPGraph* g = m_plot->graph(kBaseline);
  g->setVisible(visible);
  if (visible)
    g->addToLegend();
  else
    g->removeFromLegend();
  rescale();
}

void LossPlot::setStepsDone(int steps) {
  m_steps = std::max(1, steps);
  m_plot->graph(kBaseline)->setData({0.0, double(m_steps)}, {m_baseline, m_baseline});
  rescale();
}

double LossPlot::xAxisEnd() const { return m_plot->xAxis->range().upper; }

int LossPlot::trainPointCount() const { return m_plot->graph(kTrain)->dataCount(); }
int LossPlot::validationPointCount() const { return m_plot->graph(kValidation)->dataCount(); }

void LossPlot::rescale() {
  m_plot->xAxis->setRange(0, m_steps);
  bool found = false;
  QCPRange y;
  for (int g : {kTrain, kValidation, kBaseline}) {
    if (!m_plot->graph(g)->visible() || m_plot->graph(g)->dataCount() == 0) continue;
    bool ok = false;
    const QCPRange r = m_plot->graph(g)->getValueRange(ok);
    if (!ok) continue;
    y = found ? QCPRange(std::min(y.lower, r.lower), std::max(y.upper, r.upper)) : r;
    found = true;
  }
  if (found) {
    const double pad = std::max(0.05, (y.upper - y.lower) * 0.08);
    m_plot->yAxis->setRange(std::max(0.0, y.lower - pad), y.upper + pad);
  } else {
    m_plot->yAxis->setRange(0, 5);
  }
  // Queued: a burst of progress reports costs one repaint.
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace attnscope::gui
