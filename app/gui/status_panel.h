// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>

#include "view_state.h"

class QLabel;
class QStatusBar;

namespace attnscope::gui {

/// The permanent part of the status bar: tokens and sentences of the result, where it ran, how
/// long computing and drawing took, and "Computing…" while a job runs.
class StatusPanel final : public QObject {
  Q_OBJECT
 public:
  explicit StatusPanel(QStatusBar* bar);

  void showResult(const render::ResultPtr& result, double computeMs, double renderMs);
  void setBusy(bool busy);
  QString tokensText() const;

 private:
  QLabel* m_busy;
  QLabel* m_tokens;
  QLabel* m_device;
  QLabel* m_compute;
  QLabel* m_render;
};

}  // namespace attnscope::gui
