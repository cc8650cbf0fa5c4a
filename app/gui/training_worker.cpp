// SPDX-License-Identifier: GPL-3.0-or-later
#include "training_worker.h"

#include <exception>

#include "attnscope/error.h"
#include "attnscope/runtime.h"

namespace attnscope::gui {

void TrainingWorker::train(const TrainingJob& job) {
  TrainingOutcome outcome;
  outcome.run = job.run;
  // With OpenMP the thread count is a setting of the calling thread, so this leaves the compute
  // worker's forward passes alone; restored so a later run starts from the same state.
  const int previousThreads = threadCount();
  const bool followedLoad = threadCountFollowsLoad();
  setThreadCount(job.threads);

  TrainCallbacks callbacks;
  callbacks.cancel = job.cancel.get();
  callbacks.onProgress = [&](const TrainProgress& p) { Q_EMIT progressed(job.run, p); };
  const auto snapshotOf = [&](int step, const TinyGpt& model) {
    return TrainingSnapshot{job.run, step, std::make_shared<const TinyGpt>(model)};
  };
  callbacks.onEval = [&](int step, const TinyGpt& model) {
    Q_EMIT evaluated(snapshotOf(step, model));
  };
  callbacks.onSnapshot = [&](int step, const TinyGpt& model) {
    Q_EMIT snapshotTaken(snapshotOf(step, model));
  };
  try {
    TrainResult result = trainTinyGpt(*job.corpus, job.options, callbacks);
    outcome.cancelled = result.cancelled;
    outcome.stepsDone = result.stepsDone;
    outcome.finalValLoss = result.finalValLoss;
    outcome.model = std::make_shared<const TinyGpt>(result.model);
  } catch (const Error& e) {
    outcome.error = QString::fromStdString(e.what());
  } catch (const std::bad_alloc&) {
    outcome.error = tr("out of memory: choose a smaller model or batch");
  } catch (const std::exception& e) {
    outcome.error = tr("internal error: %1").arg(QString::fromStdString(e.what()));
  }
  setThreadCount(followedLoad ? 0 : previousThreads);
  Q_EMIT finished(outcome);
}

}  // namespace attnscope::gui
