// SPDX-License-Identifier: GPL-3.0-or-later
#include "layer_position_view.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "head_matrix.h"
#include "render_style.h"

namespace attnscope::render {

LayerPositionView::LayerPositionView(QWidget* parent) : AttentionView(parent) {
  setMouseTracking(true);
}

const std::vector<Token>& LayerPositionView::itemTokens() const {
  return result()->group().tokens[static_cast<std::size_t>(viewState().item)];
}

QString LayerPositionView::tokenText(const Token& token) {
  return axisLabel(QString::fromStdString(token.label.empty() ? token.text : token.label));
}

QRectF LayerPositionView::cellRect(int layer, int position) const {
  const int L = layers(), T = positions();
  if (m_lastCells.isEmpty() || layer < 0 || layer >= L || position < 0 || position >= T) return {};
  const double w = m_lastCells.width() / T, h = m_lastCells.height() / L;
  // The last layer on top: the residual stream rises through the rows.
  return QRectF(m_lastCells.left() + position * w, m_lastCells.top() + (L - 1 - layer) * h, w, h);
}

void LayerPositionView::rebuild(Change) {
  m_hoverLayer = m_hoverPosition = -1;
  update();
}

QString LayerPositionView::message() const {
  if (!result()) return tr("No result yet.");
  if (const QString why = missing(); !why.isEmpty()) return why;
  if (positions() == 0) return tr("This batch item has no tokens.");
  return {};
}

bool LayerPositionView::begin(QPainter& painter, const QRect& area, const RenderStyle& style,
                              bool onScreen, double sideWidth, double legendHeight) {
  if (const QString why = message(); !why.isEmpty()) {
    style.drawMessage(painter, area, why);
    finish(onScreen, false);
    return false;
  }
  const int T = positions();
  const std::vector<Token>& tokens = itemTokens();
  m_inner = QRectF(area).adjusted(8, 6, -8, -6);
  m_sideWidth = sideWidth;
  m_legendHeight = legendHeight;
  // The tokens turn when the widest does not fit its column.
  const QFontMetricsF small(style.font(11));
  double tokenWidth = 0;
  for (int t = 0; t < T; ++t)
    tokenWidth = std::max(tokenWidth,
                          small.horizontalAdvance(tokenText(tokens[static_cast<std::size_t>(t)])));
  m_turned = tokenWidth + 4 > (m_inner.width() - sideWidth) / T;
  m_bottom = std::min(m_inner.height() * 0.3,
                      (m_turned ? std::min(tokenWidth, 140.0) : small.height()) + 8);
  m_lastCells = QRectF(m_inner.left() + sideWidth, m_inner.top(), m_inner.width() - sideWidth,
                       m_inner.height() - m_bottom - legendHeight);
  if (m_lastCells.width() >= 4 && m_lastCells.height() >= 4) return true;
  style.drawMessage(painter, area, tr("The window is too small for this view."));
  finish(onScreen, false);
  return false;
}

void LayerPositionView::drawAxes(QPainter& painter, const RenderStyle& style, bool onScreen,
                                 const std::function<QString(int)>& layerLabel) {
  const int L = layers(), T = positions();
  const double w = m_lastCells.width() / T, h = m_lastCells.height() / L;
  if (onScreen && m_hoverLayer >= 0) {
    painter.setPen(QPen(style.text, 2));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(cellRect(m_hoverLayer, m_hoverPosition));
  }
  painter.setPen(style.frame);
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(m_lastCells);

  painter.setFont(style.font(11));
  const QFontMetricsF small(painter.font());
  painter.setPen(style.text);
  const int every = std::max(1, static_cast<int>(std::ceil(small.height() / h)));
  for (int l = 0; l < L; ++l) {
    if ((L - 1 - l) % every != 0) continue;
    const QRectF row = cellRect(l, 0);
    painter.drawText(QRectF(m_inner.left(), row.top(), m_sideWidth - 6, row.height()),
                     Qt::AlignRight | Qt::AlignVCenter, layerLabel(l));
  }
  const std::vector<Token>& tokens = itemTokens();
  const int everyToken =
      std::max(1, static_cast<int>(std::ceil((m_turned ? small.height() : 0.0) / w)));
  for (int t = 0; t < T; t += everyToken) {
    const QString label = small.elidedText(tokenText(tokens[static_cast<std::size_t>(t)]),
                                           Qt::ElideRight, m_turned ? m_bottom - 6 : w - 2);
    const QRectF column = cellRect(0, t);
    if (m_turned) {
      painter.save();
      painter.translate(column.center().x() + small.ascent() / 2 - 1, m_lastCells.bottom() + 4);
      painter.rotate(-90);
      painter.drawText(QRectF(-(m_bottom - 6), -small.ascent(), m_bottom - 6, small.height()),
                       Qt::AlignRight | Qt::AlignVCenter, label);
      painter.restore();
    } else {
      painter.drawText(QRectF(column.left(), m_lastCells.bottom() + 3, w, small.height()),
                       Qt::AlignHCenter | Qt::AlignTop, label);
    }
  }
}

QRectF LayerPositionView::legendRect() const {
  return QRectF(m_lastCells.left(), m_inner.bottom() - m_legendHeight, m_lastCells.width(),
                m_legendHeight);
}

void LayerPositionView::finish(bool onScreen, bool drawn) {
  if (!drawn) m_lastCells = {};
  if (onScreen) m_screenCells = m_lastCells;
}

bool LayerPositionView::hit(const QPointF& pos, int* layer, int* position) const {
  const int L = layers(), T = positions();
  if (m_screenCells.isEmpty() || !m_screenCells.contains(pos) || L == 0 || T == 0) return false;
  *position = std::clamp(
      static_cast<int>((pos.x() - m_screenCells.left()) / (m_screenCells.width() / T)), 0, T - 1);
  const int row = std::clamp(
      static_cast<int>((pos.y() - m_screenCells.top()) / (m_screenCells.height() / L)), 0, L - 1);
  *layer = L - 1 - row;
  return true;
}

void LayerPositionView::mouseMoveEvent(QMouseEvent* event) {
  int layer = -1, position = -1;
  if (!hit(event->position(), &layer, &position)) {
    layer = position = -1;
    QToolTip::hideText();
  } else {
    QToolTip::showText(event->globalPosition().toPoint(), cellTip(layer, position), this);
  }
  if (layer != m_hoverLayer || position != m_hoverPosition) {
    m_hoverLayer = layer;
    m_hoverPosition = position;
    update();
  }
}

void LayerPositionView::mouseReleaseEvent(QMouseEvent* event) {
  int layer = -1, position = -1;
  if (event->button() == Qt::LeftButton && hit(event->position(), &layer, &position))
    cellClicked(layer, position);
  AttentionView::mouseReleaseEvent(event);
}

void LayerPositionView::leaveEvent(QEvent* event) {
  m_hoverLayer = m_hoverPosition = -1;
  update();
  AttentionView::leaveEvent(event);
}

}  // namespace attnscope::render
