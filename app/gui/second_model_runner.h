// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "compute_job.h"

class QThread;

namespace attnscope::gui {

class ComputeWorker;

/// Runs the Compare view's second model (head B from another model: a quantized file against
/// its F16 original) on a worker thread of its own, so that the main worker keeps the main
/// model open. A newer job cancels the one in flight; only the newest outcome is reported.
class SecondModelRunner final : public QObject {
  Q_OBJECT
 public:
  explicit SecondModelRunner(QObject* parent = nullptr);
  ~SecondModelRunner() override;

  /// Runs `job` (its spec names the second model), superseding any job in flight.
  void run(ComputeJob job);
  /// Cancels the job in flight, if any; its outcome is not reported.
  void cancel();

 Q_SIGNALS:
  /// The second model's result, or null and the reason it failed.
  void finished(const attnscope::render::ResultPtr& result, const QString& error);
  /// To the worker thread.
  void runRequested(const attnscope::gui::ComputeJob& job);

 private:
  void onComputed(const ComputeOutcome& outcome);

  QThread* m_thread;
  ComputeWorker* m_worker;
  std::shared_ptr<std::atomic<quint64>> m_latest;
  quint64 m_generation = 0;
  std::shared_ptr<std::atomic<bool>> m_cancel;
};

}  // namespace attnscope::gui
