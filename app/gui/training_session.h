// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "training_job.h"

class QThread;

namespace attnscope::gui {

class TrainingWorker;

/// One training run at a time on a thread of its own, and the snapshots it leaves: what the Train
/// tab shows, without any widget. Messages of a superseded run are dropped; beyond kMaxSnapshots
/// every second snapshot goes (the newest stays), so a long run stays small in memory.
class TrainingSession final : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMaxSnapshots = 100;

  explicit TrainingSession(QObject* parent = nullptr);
  /// Asks a running trainer to stop and waits for its current step.
  ~TrainingSession() override;

  /// Starts a run on `corpus`, dropping the previous run's snapshots; false while one runs.
  bool start(std::shared_ptr<const std::string> corpus, const TrainOptions& options, int threads);
  /// Asks the trainer to stop after its current step; finished() follows.
  void stop();
  bool isRunning() const { return m_running; }
  bool isStopping() const { return m_cancel && m_cancel->load(); }

  /// Oldest first, at most kMaxSnapshots.
  const std::vector<TrainingSnapshot>& snapshots() const { return m_snapshots; }

  /// Inserts by step (replacing one at the same step) and thins to kMaxSnapshots.
  static void keep(std::vector<TrainingSnapshot>& snapshots, const TrainingSnapshot& snapshot);

 Q_SIGNALS:
  void progressed(const attnscope::TrainProgress& progress);
  /// A snapshot was kept (the list may also have been thinned).
  void snapshotsChanged();
  /// The run ended (its final weights already kept): done, stopped or failed.
  void finished(const attnscope::gui::TrainingOutcome& outcome);
  /// Internal: queued to the training thread.
  void trainRequested(const attnscope::gui::TrainingJob& job);

 private:
  void onSnapshot(const TrainingSnapshot& snapshot);
  void onFinished(const TrainingOutcome& outcome);

  std::vector<TrainingSnapshot> m_snapshots;
  bool m_running = false;
  quint64 m_run = 0;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  QThread* m_thread;
  TrainingWorker* m_worker;  // lives on m_thread, deleted when it finishes
};

}  // namespace attnscope::gui
