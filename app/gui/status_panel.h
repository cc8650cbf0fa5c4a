// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QElapsedTimer>
#include <QObject>

#include "attnscope/run_request.h"
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
  /// "Computing… 3 of 12 layers done, about 9 s left" while busy.
  void setProgress(int done, int total);
  /// The busy text after `done` of `total` layers in elapsedMs since the job started: the time
  /// left, from the pace so far, once it is at least a second.
  static QString progressText(int done, int total, double elapsedMs);
  /// "Memory ≈ 1.2 GiB of 8.0 GiB", the parts in the tooltip; hidden while total is 0.
  void showMemory(const MemoryEstimate& estimate, uint64_t limitBytes);
  QString memoryText() const;
  QString tokensText() const;

 private:
  QLabel* m_busy;
  QLabel* m_tokens;
  QLabel* m_device;
  QLabel* m_compute;
  QLabel* m_render;
  QLabel* m_memory;
  QElapsedTimer m_busySince;  // since setBusy(true): the pace of the layers
};

}  // namespace attnscope::gui
