// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>

#include "training_job.h"

namespace attnscope::gui {

/// Lives on the training thread (not the compute thread, so the views keep following the edits
/// while a run takes minutes): runs trainTinyGpt for a job and reports progress, evaluation
/// snapshots, kept snapshots and the end as queued signals.
class TrainingWorker final : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

 public Q_SLOTS:
  void train(const attnscope::gui::TrainingJob& job);

 Q_SIGNALS:
  void progressed(quint64 run, const attnscope::TrainProgress& progress);
  /// The weights at a validation step: the heatmaps follow these while training runs.
  void evaluated(const attnscope::gui::TrainingSnapshot& snapshot);
  /// The weights every `snapshotEvery` steps, for the step slider.
  void snapshotTaken(const attnscope::gui::TrainingSnapshot& snapshot);
  void finished(const attnscope::gui::TrainingOutcome& outcome);
};

}  // namespace attnscope::gui
