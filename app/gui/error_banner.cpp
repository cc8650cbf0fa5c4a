// SPDX-License-Identifier: GPL-3.0-or-later
#include "error_banner.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QToolButton>

#include <algorithm>

namespace attnscope::gui {

ErrorBanner::ErrorBanner(QWidget* parent)
    : QFrame(parent), m_icon(new QLabel(this)), m_text(new QLabel(this)) {
  setObjectName(QStringLiteral("errorBanner"));
  setFrameShape(QFrame::StyledPanel);
  // Tool-tip colours come from the theme and are meant to stand out from the window, in light
  // and dark palettes alike.
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::ToolTipBase);
  setForegroundRole(QPalette::ToolTipText);

  m_text->setWordWrap(true);
  m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_text->setForegroundRole(QPalette::ToolTipText);
  auto* close = new QToolButton(this);
  close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
  close->setAutoRaise(true);
  close->setToolTip(tr("Dismiss"));
  connect(close, &QToolButton::clicked, this, &ErrorBanner::clearMessage);

  auto* layout = new QHBoxLayout(this);
  layout->addWidget(m_icon, 0, Qt::AlignTop);
  layout->addWidget(m_text, 1);
  layout->addWidget(close, 0, Qt::AlignTop);
  hide();
}

void ErrorBanner::showMessage(const QString& message, Level level) {
  if (message.isEmpty()) {
    clearMessage();
    return;
  }
  const int size = style()->pixelMetric(QStyle::PM_SmallIconSize, nullptr, this);
  const auto icon =
      level == Level::Error ? QStyle::SP_MessageBoxWarning : QStyle::SP_MessageBoxInformation;
  m_icon->setPixmap(style()->standardIcon(icon).pixmap(size, size));
  m_text->setText(message);
  setProperty("level", level == Level::Error ? "error" : "notice");
  show();
  place();
}

void ErrorBanner::floatOver(QWidget* host, Qt::Alignment edge) {
  if (m_host) m_host->removeEventFilter(this);
  m_host = host;
  m_edge = edge;
  setParent(host);
  host->installEventFilter(this);
  if (!m_text->text().isEmpty()) show();
  place();
}

bool ErrorBanner::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_host && (event->type() == QEvent::Resize || event->type() == QEvent::Show))
    place();
  return QFrame::eventFilter(watched, event);
}

void ErrorBanner::place() {
  if (!m_host) return;
  const int width = m_host->width();
  const int height =
      std::min(m_host->height(), hasHeightForWidth() ? heightForWidth(width) : sizeHint().height());
  setGeometry(0, m_edge & Qt::AlignTop ? 0 : m_host->height() - height, width, height);
  raise();
}

void ErrorBanner::clearMessage() {
  m_text->clear();
  hide();
}

QString ErrorBanner::message() const {
  return isVisible() || !isHidden() ? m_text->text() : QString();
}

}  // namespace attnscope::gui
