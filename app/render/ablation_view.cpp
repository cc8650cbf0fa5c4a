// SPDX-License-Identifier: GPL-3.0-or-later
#include "ablation_view.h"

#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "head_matrix.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

constexpr double kMaxCell = 110;  // beyond this the map only gets emptier, not clearer
constexpr int kStrongest = 5;     // heads listed under the map

double maxAbsChange(const HeadAblation& a) {
  double m = 0;
  for (float v : a.logProbChange.data)
    if (std::isfinite(v)) m = std::max(m, std::abs(static_cast<double>(v)));
  return std::max(m, 1e-6);
}

// "'the' (#12)": a token as the captions quote it.
QString quoted(const Token& t, int position) {
  const QString label = axisLabel(QString::fromStdString(t.label.empty() ? t.text : t.label));
  return position >= 0 ? QStringLiteral("'%1' (#%2)").arg(label).arg(position)
                       : QStringLiteral("'%1'").arg(label);
}

}  // namespace

AblationView::AblationView(QWidget* parent)
    : AttentionView(parent),
      m_bar(new QWidget(this)),
      m_exact(new QPushButton(tr("Ablate every head"), m_bar)),
      m_estimate(new QPushButton(tr("Estimate (one pass)"), m_bar)),
      m_progress(new QProgressBar(m_bar)),
      m_cancel(new QPushButton(tr("Cancel"), m_bar)),
      m_state(new QLabel(m_bar)) {
  setMouseTracking(true);
  setMinimumSize(300, 220);
  m_exact->setObjectName(QStringLiteral("ablateExact"));
  m_exact->setToolTip(
      tr("Zero each head's output in turn and rerun the layers above it: L·H runs, exact"));
  m_estimate->setObjectName(QStringLiteral("ablateEstimate"));
  m_estimate->setToolTip(
      tr("Attribution patching: every head's effect from one forward and one backward pass, "
         "to first order (an estimate)"));
  m_progress->setObjectName(QStringLiteral("ablationProgress"));
  m_progress->setTextVisible(true);
  m_progress->setMinimumWidth(160);
  m_cancel->setObjectName(QStringLiteral("ablationCancel"));
  m_state->setObjectName(QStringLiteral("ablationState"));
  auto* bar = new QHBoxLayout(m_bar);
  bar->setContentsMargins(8, 4, 8, 0);
  bar->addWidget(m_exact);
  bar->addWidget(m_estimate);
  bar->addSpacing(12);
  bar->addWidget(m_progress, 1);
  bar->addWidget(m_cancel);
  bar->addSpacing(12);
  bar->addWidget(m_state);
  bar->addStretch(1);
  connect(m_exact, &QPushButton::clicked, this, [this] { Q_EMIT ablationRequested(false); });
  connect(m_estimate, &QPushButton::clicked, this, [this] { Q_EMIT ablationRequested(true); });
  connect(m_cancel, &QPushButton::clicked, this, &AblationView::ablationCancelRequested);
  setControlBar(m_bar);
  updateControls();
}

void AblationView::rebuild(Change) {
  updateControls();
  update();
}

void AblationView::setAblation(const AblationStatus& status) {
  m_status = status;
  updateControls();
  update();
}

bool AblationView::hasMap() const {
  const HeadAblation* a = m_status.ablation.get();
  return m_status.phase == AblationStatus::Phase::Done && a && a->layers > 0 && a->heads > 0 &&
         a->logProbChange.data.size() == static_cast<std::size_t>(a->layers) * a->heads &&
         a->probabilities.data.size() == a->logProbChange.data.size();
}

void AblationView::updateControls() {
  using Phase = AblationStatus::Phase;
  const bool running = m_status.phase == Phase::Running;
  m_exact->setEnabled(result() && !running);
  m_estimate->setEnabled(result() && !running);
  m_cancel->setEnabled(running && !m_status.cancelling);
  // Before a run: the heads it would cover, so the bar already says "0/16 heads".
  const int total = m_status.total > 0
                        ? m_status.total
                        : (result() ? result()->group().layers() * result()->group().heads() : 0);
  m_progress->setFormat(total > 0 ? tr("%v/%m heads") : QString());
  m_progress->setRange(0, std::max(1, total));
  m_progress->setValue(std::clamp(m_status.done, 0, std::max(1, total)));
  QString state;
  switch (m_status.phase) {
    case Phase::Idle:
      break;
    case Phase::Running:
      state = m_status.cancelling ? tr("cancelling…")
                                  : (m_status.estimate ? tr("estimating…") : tr("ablating…"));
      break;
    case Phase::Done:
      if (m_status.ablation)
        state = (m_status.estimate ? tr("estimate in %1 s") : tr("exact, in %1 s"))
                    .arg(m_status.ablation->milliseconds / 1000.0, 0, 'f', 2);
      break;
    case Phase::Failed:
      state = tr("failed");
      break;
    case Phase::Cancelled:
      state = tr("cancelled");
      break;
  }
  m_state->setText(state);
}

QString AblationView::message() const {
  using Phase = AblationStatus::Phase;
  switch (m_status.phase) {
    case Phase::Idle:
      return result() ? tr("Run the ablation for this text: “Ablate every head” zeroes each head "
                           "in turn and reruns the model (L·H runs); “Estimate (one pass)” "
                           "approximates every head from one forward and one backward pass.")
                      : tr("No result yet: type a text, then run the ablation for it.");
    case Phase::Running:
      if (m_status.cancelling) return tr("Cancelling the head ablation…");
      if (m_status.estimate) return tr("Estimating every head's effect in one pass…");
      return tr("Ablating heads: %1 of %2 done…").arg(m_status.done).arg(m_status.total);
    case Phase::Done:
      return hasMap() ? QString() : tr("The ablation came back empty.");
    case Phase::Failed:
      return tr("Head ablation failed: %1").arg(m_status.message);
    case Phase::Cancelled:
      return tr("Head ablation cancelled after %1 of %2 heads. Run it again to see the map.")
          .arg(m_status.done)
          .arg(m_status.total);
  }
  return QString();
}

QRectF AblationView::cellRect(int layer, int head) const {
  if (!hasMap() || m_lastCells.isEmpty()) return QRectF();
  const HeadAblation& a = *m_status.ablation;
  if (layer < 0 || layer >= a.layers || head < 0 || head >= a.heads) return QRectF();
  const double w = m_lastCells.width() / a.heads, h = m_lastCells.height() / a.layers;
  return QRectF(m_lastCells.left() + head * w, m_lastCells.top() + layer * h, w, h);
}

double AblationView::drawCaption(QPainter& painter, const QRect& area,
                                 const RenderStyle& style) const {
  const HeadAblation& a = *m_status.ablation;
  const QFont big = style.font(13), small = style.font(11);
  const QFontMetricsF fm(big), sfm(small);
  const int last = std::clamp<int>(a.position, 0, std::max<int>(0, int(a.tokens.size()) - 1));
  const QString what =
      a.maskFill ? tr("the fill of the mask at #%1").arg(a.position)
      : a.tokens.empty()
          ? tr("the next token")
          : tr("the next token after %1").arg(quoted(a.tokens[std::size_t(last)], a.position));
  QString detail =
      tr("baseline p = %1 for %2").arg(MatrixPainter::formatValue(a.baseline, 4)).arg(what);
  if (m_status.item > 0 || (result() && result()->group().batch() > 1))
    detail += tr(" · batch item %1").arg(m_status.item);
  detail +=
      a.estimate
          ? tr(" · estimate (attribution patching, first order): one forward and one "
               "backward pass")
          : tr(" · exact: each head zeroed in its own run (%1 heads)").arg(a.layers * a.heads);
  QStringList lines;
  for (const std::string& n : a.notices) lines << QString::fromStdString(n);
  const QString heading = tr("Δ log p of %1 when each head's output is zeroed%2")
                              .arg(quoted(a.target, -1))
                              .arg(a.estimate ? tr(" — estimate") : QString());
  double y = area.top() + 4;
  painter.setFont(big);
  painter.setPen(style.text);
  painter.drawText(QRectF(area.left() + 8, y, area.width() - 16, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(heading, Qt::ElideMiddle, area.width() - 16));
  y += fm.height() + 4;
  painter.setFont(small);
  painter.setPen(style.muted);
  const QRectF detailBox(area.left() + 8, y, area.width() - 16, sfm.height() * 2.4);
  const QRectF used = painter.boundingRect(detailBox, Qt::TextWordWrap, detail);
  painter.drawText(detailBox, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, detail);
  y += std::min(used.height(), detailBox.height()) + 2;
  for (const QString& n : lines) {
    painter.drawText(QRectF(area.left() + 8, y, area.width() - 16, sfm.height()),
                     Qt::AlignLeft | Qt::AlignVCenter,
                     sfm.elidedText(n, Qt::ElideRight, area.width() - 16));
    y += sfm.height();
  }
  return y + 8;
}

QString AblationView::strongestHeads() const {
  // By |Δ log p|: the few a reader looks for first, however big the map.
  const HeadAblation& a = *m_status.ablation;
  const int L = a.layers, H = a.heads;
  std::vector<int> order(static_cast<std::size_t>(L * H));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int i, int j) {
    return std::abs(a.logProbChange.data[static_cast<std::size_t>(i)]) >
           std::abs(a.logProbChange.data[static_cast<std::size_t>(j)]);
  });
  QStringList strongest;
  for (int k = 0; k < std::min<int>(kStrongest, L * H); ++k) {
    const int i = order[static_cast<std::size_t>(k)];
    const QString head = tr("L%1 H%2 %3")
                             .arg(i / H)
                             .arg(i % H)
                             .arg(MatrixPainter::formatValue(a.change(i / H, i % H), 3));
    // An estimate's probability is first order and can leave [0, 1]: its Δ log p alone is shown.
    strongest << (a.estimate
                      ? head
                      : tr("%1 (p %2)")
                            .arg(head)
                            .arg(MatrixPainter::formatValue(a.probability(i / H, i % H), 3)));
  }
  return tr("strongest: %1").arg(strongest.join(QStringLiteral(" · ")));
}

void AblationView::drawMap(QPainter& painter, const QRectF& cells, double range,
                           const RenderStyle& style) const {
  const HeadAblation& a = *m_status.ablation;
  const int L = a.layers, H = a.heads;
  const double cell = cells.width() / H;
  const Palette diverging = Palette::diverging();
  MatrixPainter::drawCells(
      painter, cells,
      MatrixPainter::colorize(a.logProbChange.data.data(), L, H, diverging, -range, range));
  painter.setBrush(Qt::NoBrush);
  if (cell >= 6) {
    painter.setPen(QPen(style.background, 1));
    for (int h = 1; h < H; ++h)
      painter.drawLine(QPointF(cells.left() + h * cell, cells.top()),
                       QPointF(cells.left() + h * cell, cells.bottom()));
    for (int l = 1; l < L; ++l)
      painter.drawLine(QPointF(cells.left(), cells.top() + l * cell),
                       QPointF(cells.right(), cells.top() + l * cell));
  }
  painter.setPen(QPen(style.frame, 0));
  painter.drawRect(cells);
  // The values, where a cell holds "−0.00" at a readable size.
  QFont valueFont = style.font(std::clamp(cell * 0.28, 9.0, 14.0) / style.fontScale);
  const QFontMetricsF vfm(valueFont);
  if (vfm.horizontalAdvance(QStringLiteral("−0.00")) + 4 <= cell && vfm.height() + 2 <= cell) {
    painter.setFont(valueFont);
    for (int l = 0; l < L; ++l) {
      for (int h = 0; h < H; ++h) {
        const double v = a.change(l, h);
        const QColor c = diverging.colorAt(0.5 + 0.5 * v / range);
        painter.setPen(Palette::inkOn(c));
        painter.drawText(cellRect(l, h), Qt::AlignCenter, MatrixPainter::formatValue(v, 2));
      }
    }
  }
  // The selected head, the one the other views show.
  if (const QRectF sel = cellRect(viewState().layer, viewState().head); !sel.isEmpty()) {
    // Dark and light together: readable on both ends of the diverging palette.
    painter.setPen(QPen(style.text, 2));
    painter.drawRect(sel.adjusted(1, 1, -1, -1));
    painter.setPen(QPen(style.background, 1));
    painter.drawRect(sel.adjusted(2.5, 2.5, -2.5, -2.5));
  }
}

void AblationView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                        bool onScreen) {
  m_lastCells = QRectF();
  if (onScreen) m_screenCells = QRectF();
  if (!hasMap()) {
    style.drawMessage(painter, QRectF(area).adjusted(24, 0, -24, 0), message());
    return;
  }
  const HeadAblation& a = *m_status.ablation;
  const int L = a.layers, H = a.heads;
  const QFont small = style.font(11);
  const QFontMetricsF sfm(small);
  // The caption: what was predicted, how likely, and whether the map is exact.
  const double y = drawCaption(painter, area, style);
  const double footer = sfm.height() * 2.8;

  // The map: layers down, heads across, square cells as large as fit.
  QStringList rowLabels, colLabels;
  for (int l = 0; l < L; ++l) rowLabels << QStringLiteral("L%1").arg(l);
  for (int h = 0; h < H; ++h) colLabels << QStringLiteral("H%1").arg(h);
  const double labelW = MatrixPainter::labelWidth(rowLabels, small) + 10;
  const double barW = MatrixPainter::colorBarWidth(style, 14) + 24;
  const double left = area.left() + 8 + labelW;
  const double availW = area.right() - 8 - barW - left;
  const double colLabelH = sfm.height() + 6;
  const double availH = area.bottom() - footer - colLabelH - y;
  const double cell = std::clamp(std::min(availW / H, availH / L), 1.0, kMaxCell);
  const QRectF cells(left, y, cell * H, cell * L);
  m_lastCells = cells;
  if (onScreen) m_screenCells = cells;
  const double range = maxAbsChange(a);
  drawMap(painter, cells, range, style);
  MatrixPainter::drawRowLabels(painter, cells, rowLabels, small, style.text);
  MatrixPainter::drawColumnLabels(painter, cells, colLabels, small, style.text);

  const double barHeight = std::max(cells.height(), std::min(160.0, availH));
  MatrixPainter::drawColorBar(painter, QRectF(cells.right() + 24, cells.top(), 14, barHeight),
                              Palette::diverging(), -range, range, style,
                              a.estimate ? tr("Δ log p (estimate)") : tr("Δ log p"));

  const double footerTop = std::max(cells.bottom(), cells.top() + barHeight) + colLabelH + 4;
  painter.setFont(small);
  painter.setPen(style.text);
  painter.drawText(QRectF(area.left() + 8, footerTop, area.width() - 16, sfm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   sfm.elidedText(strongestHeads(), Qt::ElideRight, area.width() - 16));
  painter.setPen(style.muted);
  painter.drawText(
      QRectF(area.left() + 8, footerTop + sfm.height() * 1.2, area.width() - 16, sfm.height()),
      Qt::AlignLeft | Qt::AlignVCenter,
      sfm.elidedText(
          tr("blue: the prediction gets less likely without the head, red: more; click a head "
             "to open it") +
              (a.estimate ? tr(" · estimate: first-order Δ log p, so no probabilities are "
                               "listed (to first order they can leave [0, 1])")
                          : QString()),
          Qt::ElideRight, area.width() - 16));
}

bool AblationView::hit(const QPointF& pos, int* layer, int* head) const {
  if (!hasMap() || m_screenCells.isEmpty() || !m_screenCells.contains(pos)) return false;
  const HeadAblation& a = *m_status.ablation;
  *head = std::clamp(
      static_cast<int>((pos.x() - m_screenCells.left()) / m_screenCells.width() * a.heads), 0,
      a.heads - 1);
  *layer = std::clamp(
      static_cast<int>((pos.y() - m_screenCells.top()) / m_screenCells.height() * a.layers), 0,
      a.layers - 1);
  return true;
}

void AblationView::mouseMoveEvent(QMouseEvent* event) {
  int l = 0, h = 0;
  if (!hit(event->position(), &l, &h)) {
    QToolTip::hideText();
    return;
  }
  const HeadAblation& a = *m_status.ablation;
  const QString approx = a.estimate ? QStringLiteral("≈ ") : QString();
  // A first-order probability outside [0, 1] is shown at the bound it passed, marked.
  const double raw = a.probability(l, h), p = std::clamp(raw, 0.0, 1.0);
  const QString clamped = a.estimate && (p != raw || a.baseline * (1 + a.change(l, h)) > 1 ||
                                         a.baseline * (1 + a.change(l, h)) < 0)
                              ? tr(" (clamped: to first order it leaves [0, 1])")
                              : QString();
  QToolTip::showText(event->globalPosition().toPoint(),
                     tr("layer %1, head %2 (click to open)\np(%3) %4%5 with the head zeroed, "
                        "baseline %6\nΔ log p %4%7%8")
                         .arg(l)
                         .arg(h)
                         .arg(quoted(a.target, -1))
                         .arg(approx)
                         .arg(MatrixPainter::formatValue(p, 4) + clamped)
                         .arg(MatrixPainter::formatValue(a.baseline, 4))
                         .arg(MatrixPainter::formatValue(a.change(l, h), 4))
                         .arg(a.estimate ? tr(" (first-order estimate)") : QString()),
                     this);
}

void AblationView::mouseReleaseEvent(QMouseEvent* event) {
  int l = 0, h = 0;
  if (event->button() == Qt::LeftButton && hit(event->position(), &l, &h))
    Q_EMIT headActivated(l, h);
}

}  // namespace attnscope::render
