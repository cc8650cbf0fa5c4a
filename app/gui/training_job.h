// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QMetaType>
#include <QString>

#include <atomic>
#include <memory>
#include <string>

#include "attnscope/tiny_gpt.h"
#include "attnscope/training.h"

namespace attnscope::gui {

/// One training run as the panel asks for it. The corpus is shared, not copied, since it can be
/// megabytes; `cancel` is set by Stop and polled by the trainer between steps.
struct TrainingJob {
  quint64 run = 0;  // tells this run's signals from those of a run stopped before it
  std::shared_ptr<const std::string> corpus;
  TrainOptions options;
  int threads = 1;  // LibTorch intra-op threads of the training thread
  std::shared_ptr<std::atomic<bool>> cancel;
};

/// A copy of the weights at one step; the trainer hands out clones, so nothing trains them further.
struct TrainingSnapshot {
  quint64 run = 0;
  int step = 0;
  std::shared_ptr<const TinyGpt> model;
};

/// How a run ended.
struct TrainingOutcome {
  quint64 run = 0;
  QString error;  // empty when it trained (or was stopped)
  bool cancelled = false;
  int stepsDone = 0;
  double finalValLoss = 0;
  std::shared_ptr<const TinyGpt> model;  // null on error
};

}  // namespace attnscope::gui

Q_DECLARE_METATYPE(attnscope::gui::TrainingJob)
Q_DECLARE_METATYPE(attnscope::gui::TrainingSnapshot)
Q_DECLARE_METATYPE(attnscope::gui::TrainingOutcome)
Q_DECLARE_METATYPE(attnscope::TrainProgress)
