// SPDX-License-Identifier: GPL-3.0-or-later
#include "render_style.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>
#include <QWidget>

#include <cmath>

#include "palette.h"

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
  // The palette's placeholder grey is 4.0:1 on Fusion's white: muted text is darkened (or, in a
  // dark theme, lightened) to WCAG AA, since axis titles and hints are read, not decoration.
  s.muted = Palette::readableOn(p.color(QPalette::PlaceholderText), s.background, s.text);
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

int RenderStyle::titleHeight() const {
  return static_cast<int>(std::ceil(QFontMetricsF(font(16, true)).height() * 1.8));
}

QRect RenderStyle::drawTitle(QPainter& painter, const QRect& rect, const QString& title) const {
  if (title.isEmpty()) return rect;
  const QFont f = font(16, true);
  const int height = titleHeight();
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
