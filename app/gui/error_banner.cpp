// SPDX-License-Identifier: GPL-3.0-or-later
#include "error_banner.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QStyle>
#include <QToolButton>

#include <algorithm>

#include "core_message.h"

namespace attnscope::gui {

ErrorBanner::ErrorBanner(QWidget* parent)
    : QFrame(parent),
      m_icon(new QLabel(this)),
      m_text(new QLabel(this)),
      m_details(new QToolButton(this)) {
  setObjectName(QStringLiteral("errorBanner"));
  setFrameShape(QFrame::StyledPanel);
  // Tool-tip colours come from the theme and are meant to stand out from the window, in light
  // and dark palettes alike.
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::ToolTipBase);
  setForegroundRole(QPalette::ToolTipText);

  m_text->setWordWrap(true);
  // A message may hold a path, one long word: it wraps within the banner, never widens it.
  QSizePolicy policy = m_text->sizePolicy();
  policy.setHorizontalPolicy(QSizePolicy::Ignored);
  m_text->setSizePolicy(policy);
  m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_text->setForegroundRole(QPalette::ToolTipText);
  m_details->setText(tr("Details…"));
  m_details->setCheckable(true);
  m_details->setAutoRaise(true);
  m_details->setObjectName(QStringLiteral("bannerDetails"));
  m_details->setToolTip(tr("Show the whole message"));
  m_details->hide();
  connect(m_details, &QToolButton::toggled, this, [this](bool on) {
    m_text->setText(on ? m_full : summaryOf(m_full));
    m_details->setText(on ? tr("Less") : tr("Details…"));
    place();
  });
  auto* close = new QToolButton(this);
  close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
  close->setAutoRaise(true);
  close->setToolTip(tr("Dismiss"));
  connect(close, &QToolButton::clicked, this, &ErrorBanner::clearMessage);

  auto* layout = new QHBoxLayout(this);
  layout->addWidget(m_icon, 0, Qt::AlignTop);
  layout->addWidget(m_text, 1);
  layout->addWidget(m_details, 0, Qt::AlignTop);
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
  // Every message of the window passes here: the core's CLI advice becomes the window's.
  m_full = CoreMessage::forWindow(message);
  const QString summary = summaryOf(m_full);
  {
    const QSignalBlocker blocker(m_details);
    m_details->setChecked(false);
    m_details->setText(tr("Details…"));
  }
  m_details->setVisible(summary != m_full);
  m_text->setText(summary);
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
  m_full.clear();
  m_text->clear();
  hide();
}

QString ErrorBanner::message() const { return isVisible() || !isHidden() ? m_full : QString(); }

QString ErrorBanner::summaryOf(const QString& message) {
  // One readable line: the first, cut at a sentence's length; backtraces and lists go in Details.
  constexpr int kMaxSummary = 240;
  QString line = message.section(QLatin1Char('\n'), 0, 0).trimmed();
  if (line.size() > kMaxSummary) line = line.left(kMaxSummary - 1) + QChar(0x2026);
  return line;
}

}  // namespace attnscope::gui
