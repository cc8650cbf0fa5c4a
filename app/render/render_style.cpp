// SPDX-License-Identifier: GPL-3.0-or-later
#include "render_style.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>
#include <QWidget>

#include <cmath>

namespace attnscope::render {

RenderStyle RenderStyle::forExport(const ViewState& state) {
  RenderStyle s;
  s.fontScale = state.classroom ? 1.6 : 1.0;
  return s;
}

RenderStyle RenderStyle::forWidget(const QWidget& widget, const ViewState& state) {
  RenderStyle s = forExport(state);
  const QPalette& p = widget.palette();
  s.background = p.color(QPalette::Base);
  s.text = p.color(QPalette::Text);
  s.muted = p.color(QPalette::PlaceholderText);
  s.frame = p.color(QPalette::Mid);
  s.accent = p.color(QPalette::Highlight);
  return s;
}

QFont RenderStyle::font(double pixels, bool bold) const {
  QFont f(QStringLiteral("DejaVu Sans"));
  f.setStyleHint(QFont::SansSerif);
  f.setPixelSize(std::max(1, static_cast<int>(std::lround(pixels * fontScale))));
  f.setBold(bold);
  return f;
}

QRect RenderStyle::drawTitle(QPainter& painter, const QRect& rect, const QString& title) const {
  if (title.isEmpty()) return rect;
  const QFont f = font(16, true);
  const int height = static_cast<int>(std::ceil(QFontMetricsF(f).height() * 1.8));
  painter.save();
  painter.setFont(f);
  painter.setPen(text);
  painter.drawText(QRect(rect.left() + 8, rect.top(), rect.width() - 16, height),
                   Qt::AlignLeft | Qt::AlignVCenter, title);
  painter.restore();
  return rect.adjusted(0, height, 0, 0);
}

void RenderStyle::drawMessage(QPainter& painter, const QRectF& rect, const QString& message) const {
  painter.save();
  painter.setPen(muted);
  painter.setFont(font(14));
  painter.drawText(rect, Qt::AlignCenter | Qt::TextWordWrap, message);
  painter.restore();
}

}  // namespace attnscope::render
