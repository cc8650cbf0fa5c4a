// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFrame>

class QLabel;
class QToolButton;

namespace attnscope::gui {

/// A dismissable strip above the views that says what went wrong (or what the user must know)
/// without a modal dialog, so the last good result stays visible and the window stays usable.
/// In a layout it takes room when shown; floatOver() makes it an overlay on the top or bottom edge
/// of a widget instead, so showing a message moves nothing under the mouse.
class ErrorBanner final : public QFrame {
  Q_OBJECT
 public:
  enum class Level { Error, Notice };
  explicit ErrorBanner(QWidget* parent = nullptr);

  void showMessage(const QString& message, Level level = Level::Error);
  void clearMessage();
  /// The whole message; the banner shows its first line (up to 240 characters) and a Details…
  /// button for the rest.
  QString message() const;
  /// The line the banner shows of a message.
  static QString summaryOf(const QString& message);
  /// Floats over `host` along its top or bottom edge (Qt::AlignTop or Qt::AlignBottom), full
  /// width, above its children; the banner must not be in a layout.
  void floatOver(QWidget* host, Qt::Alignment edge = Qt::AlignBottom);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void place();

  QWidget* m_host = nullptr;
  Qt::Alignment m_edge = Qt::AlignBottom;
  QLabel* m_icon;
  QLabel* m_text;
  QToolButton* m_details;
  QString m_full;
};

}  // namespace attnscope::gui
