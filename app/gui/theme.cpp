// SPDX-License-Identifier: GPL-3.0-or-later
#include "theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

#include <optional>

namespace attnscope::gui {
namespace {

struct SystemLook {
  QString style;
  QPalette palette;
};

const SystemLook& systemLook() {
  static const SystemLook look{QApplication::style()->name(), QApplication::palette()};
  return look;
}

// Selected rows and tabs carry white text: Fusion's own blues (#308cc6, and #2a82da as dark
// palettes often use) give it 3.7:1 and 4.0:1, below WCAG AA's 4.5; this one gives 5.3:1.
const QColor kHighlight(0x1f, 0x6f, 0xb2);

QPalette lightPalette() {
  QPalette p = QApplication::style()->standardPalette();
  p.setColor(QPalette::Highlight, kHighlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  // Fusion's placeholder grey (#7f7f7f) is 4.0:1 on white; the hints in empty boxes are read.
  for (QPalette::ColorGroup g : {QPalette::Active, QPalette::Inactive})
    p.setColor(g, QPalette::PlaceholderText, QColor(0x6b, 0x6b, 0x6b));
  return p;
}

QPalette darkPalette() {
  QPalette p;
  const QColor window(45, 45, 48), base(30, 30, 32), text(230, 230, 230), mid(80, 80, 85);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(255, 90, 90));
  p.setColor(QPalette::Light, QColor(70, 70, 74));
  p.setColor(QPalette::Midlight, QColor(60, 60, 64));
  p.setColor(QPalette::Mid, mid);
  p.setColor(QPalette::Dark, QColor(20, 20, 22));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, kHighlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(90, 160, 240));
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, QColor(128, 128, 128));
  return p;
}

}  // namespace

QString toString(Theme theme) {
  switch (theme) {
    case Theme::Light:
      return QStringLiteral("light");
    case Theme::Dark:
      return QStringLiteral("dark");
    case Theme::System:
      break;
  }
  return QStringLiteral("system");
}

Theme parseTheme(const QString& name) {
  if (name == QStringLiteral("light")) return Theme::Light;
  if (name == QStringLiteral("dark")) return Theme::Dark;
  return Theme::System;
}

void applyTheme(Theme theme) {
  const SystemLook& system = systemLook();
  if (theme == Theme::System) {
    QApplication::setStyle(QStyleFactory::create(system.style));
    QApplication::setPalette(system.palette);
    return;
  }
  // Fusion draws every control from the palette, so light and dark look the same everywhere.
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QApplication::setPalette(theme == Theme::Dark ? darkPalette() : lightPalette());
}

}  // namespace attnscope::gui
