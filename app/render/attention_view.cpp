// SPDX-License-Identifier: GPL-3.0-or-later
#include "attention_view.h"

#include <QPainter>
#include <QVBoxLayout>

#include <utility>

#include "render_style.h"

namespace attnscope::render {

void AttentionView::setResult(ResultPtr result) {
  m_result = std::move(result);
  runRebuild(Change::Result);
}

void AttentionView::setViewState(const ViewState& state) {
  // The whole state is compared, so no field can change without a rebuild.
  if (state == m_state) return;
  m_state = state;
  runRebuild(Change::State);
}

void AttentionView::runRebuild(Change change) {
  ++m_rebuilds;
  rebuild(change);
}

void AttentionView::renderTo(QPainter& painter, const QRect& rect, const QString& title,
                             bool themed) {
  paintView(painter, rect, title, painter.device() == this, themed);
}

QSize AttentionView::legibleExportSize(const QSize& requested, const QString& title,
                                       bool themed) const {
  const RenderStyle style =
      themed ? RenderStyle::forWidget(*this, m_state) : RenderStyle::forExport(m_state);
  const int titleHeight = title.isEmpty() ? 0 : style.titleHeight();
  const QSize least = minimumDrawingSize(style, requested.width());
  if (least.isEmpty()) return requested;
  return requested.expandedTo(QSize(least.width(), least.height() + titleHeight));
}

QSize AttentionView::minimumDrawingSize(const RenderStyle&, int) const { return {}; }

void AttentionView::paintView(QPainter& painter, const QRect& rect, const QString& title,
                              bool onScreen, bool themed) {
  const RenderStyle style =
      onScreen || themed ? RenderStyle::forWidget(*this, m_state) : RenderStyle::forExport(m_state);
  painter.save();
  painter.fillRect(rect, style.background);
  const QRect area = style.drawTitle(painter, rect, title);
  draw(painter, area, style, onScreen);
  painter.restore();
}

void AttentionView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  paintView(painter, canvas(), QString(), true);
}

void AttentionView::setControlBar(QWidget* bar) {
  m_controlBar = bar;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(bar);
  layout->addStretch(1);
}

QRect AttentionView::canvas() const {
  const bool shown = m_controlBar && m_controlBar->isVisible();
  return rect().adjusted(0, shown ? m_controlBar->geometry().bottom() + 1 : 0, 0, 0);
}

}  // namespace attnscope::render
