// SPDX-License-Identifier: GPL-3.0-or-later
#include "alignment_view.h"

#include <QComboBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSignalBlocker>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "palette.h"
#include "render_style.h"

namespace attnscope::render {

namespace {

// Each target token's strongest source tokens: at most kTopSources, none below kMinWeight except
// the strongest, which is always drawn: a near-uniform model over many source tokens has every
// weight below the floor and would otherwise draw nothing at all.
std::vector<AlignmentView::Line> strongestSources(const HeadMatrix& m) {
  std::vector<AlignmentView::Line> lines;
  for (int r = 0; r < m.rows; ++r) {
    std::vector<int> order(static_cast<std::size_t>(m.cols));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return m.at(r, a) > m.at(r, b); });
    for (int i = 0; i < std::min(AlignmentView::kTopSources, m.cols); ++i) {
      const int c = order[static_cast<std::size_t>(i)];
      const double w = m.at(r, c);
      if (!(w > 0) || (i > 0 && !(w >= AlignmentView::kMinWeight))) break;
      lines.push_back({r, c, w});
    }
  }
  return lines;
}

}  // namespace

AlignmentView::AlignmentView(QWidget* parent) : AttentionView(parent), m_layers(new QComboBox) {
  setMouseTracking(true);
  setMinimumSize(240, 200);
  auto* bar = new QWidget(this);
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(8, 4, 8, 0);
  row->addWidget(new QLabel(tr("Average over:"), bar));
  m_layers->setParent(bar);
  m_layers->setObjectName(QStringLiteral("alignmentLayers"));
  m_layers->addItem(tr("the heads of the selected layer"));
  m_layers->addItem(tr("every layer's heads"));
  row->addWidget(m_layers);
  row->addStretch(1);
  setControlBar(bar);
  connect(m_layers, &QComboBox::currentIndexChanged, this,
          [this](int index) { setAllLayers(index == 1); });
}

void AlignmentView::setAllLayers(bool all) {
  {
    const QSignalBlocker blocker(m_layers);
    m_layers->setCurrentIndex(all ? 1 : 0);
  }
  if (all == m_allLayers) return;
  m_allLayers = all;
  average();
}

void AlignmentView::average() {
  m_mean = HeadMatrix();
  m_problem.clear();
  update();
  const AttentionGroup* g = result() ? result()->findGroup("cross") : nullptr;
  if (!result()) {
    m_problem = QStringLiteral("No result yet");
    return;
  }
  if (!g || !result()->findGroup("decoder_self")) {
    m_problem = QStringLiteral(
        "The alignment view shows an encoder-decoder's cross-attention (T5, BART, Marian): which "
        "source tokens each target token looks at");
    return;
  }
  const ViewState& s = viewState();
  if (s.item < 0 || s.item >= g->batch() || s.layer < 0 || g->heads() <= 0) {
    m_problem = QStringLiteral("Selection out of range");
    return;
  }
  const int first = m_allLayers ? 0 : std::min(s.layer, g->layers() - 1);
  const int last = m_allLayers ? g->layers() - 1 : first;
  int count = 0;
  for (int l = first; l <= last; ++l) {
    for (int h = 0; h < g->heads(); ++h) {
      const HeadMatrix m = HeadMatrix::of(*g, l, s.item, h, false, s.hideSpecial, s.mergeWords);
      if (count == 0) {
        m_mean = m;
        std::fill(m_mean.values.begin(), m_mean.values.end(), 0.0f);
      }
      for (std::size_t i = 0; i < m.values.size() && i < m_mean.values.size(); ++i)
        m_mean.values[i] += std::isfinite(m.values[i]) ? m.values[i] : 0.0f;
      ++count;
    }
  }
  for (float& v : m_mean.values) v /= static_cast<float>(std::max(1, count));
  if (m_mean.rows == 0 || m_mean.cols == 0) m_problem = QStringLiteral("No tokens to show");
}

double AlignmentView::drawCaption(QPainter& painter, const QRect& area,
                                  const RenderStyle& style) const {
  // What is averaged and what is left out.
  const QFont captionFont = style.font(12);
  const QFontMetricsF cfm(captionFont);
  const QString caption =
      (m_allLayers ? QStringLiteral("Cross-attention, mean over every layer's heads")
                   : QStringLiteral("Cross-attention, mean over the heads of layer %1")
                         .arg(viewState().layer)) +
      QStringLiteral(
          " · %1 lines: each target token's strongest source token, and up to %2 "
          "more of weight %3 or more")
          .arg(m_lines.size())
          .arg(kTopSources - 1)
          .arg(kMinWeight) +
      (m_mean.hiddenSpecial > 0 ? QStringLiteral(" · special tokens hidden, rows renormalised")
                                : QString());
  const QRectF captionRect(area.left() + 8, area.top() + 4, area.width() - 16, cfm.height() * 2.4);
  painter.setPen(style.muted);
  painter.setFont(captionFont);
  painter.drawText(captionRect, Qt::AlignLeft | Qt::TextWordWrap, caption);
  return captionRect.bottom();
}

void AlignmentView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                         bool onScreen) {
  painter.setRenderHint(QPainter::Antialiasing);
  m_lines.clear();
  if (!m_problem.isEmpty()) {
    style.drawMessage(painter, area, m_problem);
    return;
  }
  const HeadMatrix& m = m_mean;
  m_lines = strongestSources(m);  // first: the caption counts them
  // Two columns of tokens: target (queries) on the left, source (keys) on the right.
  const double top = drawCaption(painter, area, style) + 8;
  const double height = std::max(40.0, area.bottom() - top - 24);
  const int n = std::max(m.rows, m.cols);
  const double pitch = height / std::max(1, n);
  const double fontPixels = std::clamp(pitch * 0.7, 7.0, 16.0);
  const QFont tokenFont = style.font(fontPixels);
  const QFontMetricsF fm(tokenFont);
  const double labelWidth =
      std::min(area.width() * 0.3, std::max(fm.horizontalAdvance(QStringLiteral("target")),
                                            [&] {
                                              double w = 0;
                                              for (const QString& t : m.rowLabels)
                                                w = std::max(w, fm.horizontalAdvance(t));
                                              for (const QString& t : m.colLabels)
                                                w = std::max(w, fm.horizontalAdvance(t));
                                              return w;
                                            }()) +
                                       8);
  const double leftX = area.left() + 12, rightX = area.right() - 12 - labelWidth;
  const double rowPitch = height / std::max(1, m.rows), colPitch = height / std::max(1, m.cols);
  std::vector<QRectF> targets, sources;
  for (int r = 0; r < m.rows; ++r)
    targets.emplace_back(leftX, top + r * rowPitch, labelWidth, rowPitch);
  for (int c = 0; c < m.cols; ++c)
    sources.emplace_back(rightX, top + c * colPitch, labelWidth, colPitch);
  painter.setPen(style.muted);
  painter.setFont(style.font(11, true));
  painter.drawText(QRectF(leftX, area.bottom() - 20, labelWidth, 18), Qt::AlignLeft,
                   QStringLiteral("target"));
  painter.drawText(QRectF(rightX, area.bottom() - 20, labelWidth, 18), Qt::AlignRight,
                   QStringLiteral("source"));

  // The focus: the token under the mouse, else the pinned query.
  int focusTarget = onScreen ? m_hoverTarget : -1;
  const int focusSource = onScreen ? m_hoverSource : -1;
  if (focusTarget < 0 && focusSource < 0) focusTarget = m.rowOfToken(viewState().pinnedQuery);

  const QColor lineColor = Palette::categorical(0);
  for (const Line& line : m_lines) {
    const bool dim = (focusTarget >= 0 && line.target != focusTarget) ||
                     (focusSource >= 0 && line.source != focusSource);
    QColor c = lineColor;
    c.setAlphaF(std::clamp(dim ? line.weight * 0.15 : 0.15 + 0.85 * line.weight, 0.0, 1.0));
    painter.setPen(QPen(c, 1.0 + 4.0 * line.weight, Qt::SolidLine, Qt::RoundCap));
    const QRectF& t = targets[static_cast<std::size_t>(line.target)];
    const QRectF& s = sources[static_cast<std::size_t>(line.source)];
    painter.drawLine(QPointF(t.right() + 4, t.center().y()), QPointF(s.left() - 4, s.center().y()));
  }
  painter.setFont(tokenFont);
  for (int r = 0; r < m.rows; ++r) {
    painter.setPen(r == focusTarget ? style.accent : style.text);
    painter.drawText(targets[static_cast<std::size_t>(r)], Qt::AlignRight | Qt::AlignVCenter,
                     m.rowLabels.value(r));
  }
  for (int c = 0; c < m.cols; ++c) {
    painter.setPen(c == focusSource ? style.accent : style.text);
    painter.drawText(sources[static_cast<std::size_t>(c)], Qt::AlignLeft | Qt::AlignVCenter,
                     m.colLabels.value(c));
  }
  if (onScreen) {
    m_targetRects = targets;
    m_sourceRects = sources;
  }
}

void AlignmentView::mouseMoveEvent(QMouseEvent* event) {
  const QPointF p = event->position();
  int target = -1, source = -1;
  for (std::size_t i = 0; i < m_targetRects.size(); ++i)
    if (m_targetRects[i].contains(p)) target = static_cast<int>(i);
  for (std::size_t i = 0; i < m_sourceRects.size(); ++i)
    if (m_sourceRects[i].contains(p)) source = static_cast<int>(i);
  if (target == m_hoverTarget && source == m_hoverSource) return;
  m_hoverTarget = target;
  m_hoverSource = source;
  if (target >= 0)
    setToolTip(m_mean.rowTexts.value(target));
  else if (source >= 0)
    setToolTip(m_mean.colTexts.value(source));
  else
    setToolTip(QString());
  update();
}

void AlignmentView::leaveEvent(QEvent*) {
  m_hoverTarget = m_hoverSource = -1;
  update();
}

}  // namespace attnscope::render
