// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFrame>

class QLabel;

namespace attnscope::gui {

/// A dismissable strip above the views that says what went wrong (or what the user must know)
/// without a modal dialog, so the last good result stays visible and the window stays usable.
class ErrorBanner final : public QFrame {
  Q_OBJECT
 public:
  enum class Level { Error, Notice };
  explicit ErrorBanner(QWidget* parent = nullptr);

  void showMessage(const QString& message, Level level = Level::Error);
  void clearMessage();
  QString message() const;

 private:
  QLabel* m_icon;
  QLabel* m_text;
};

}  // namespace attnscope::gui
