// SPDX-License-Identifier: GPL-3.0-or-later
#include "training_session.h"

#include <QThread>

#include <algorithm>

#include "training_worker.h"

namespace attnscope::gui {

TrainingSession::TrainingSession(QObject* parent)
    : QObject(parent), m_thread(new QThread(this)), m_worker(new TrainingWorker) {
  // Queued signals carry these across the thread.
  qRegisterMetaType<TrainingJob>();
  qRegisterMetaType<TrainingSnapshot>();
  qRegisterMetaType<TrainingOutcome>();
  qRegisterMetaType<TrainProgress>();
  m_thread->setObjectName(QStringLiteral("attnscope-training"));
  m_worker->moveToThread(m_thread);
  connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
  connect(this, &TrainingSession::trainRequested, m_worker, &TrainingWorker::train,
          Qt::QueuedConnection);
  connect(
      m_worker, &TrainingWorker::progressed, this,
      [this](quint64 run, const TrainProgress& p) {
        if (run == m_run) Q_EMIT progressed(p);
      },
      Qt::QueuedConnection);
  connect(m_worker, &TrainingWorker::evaluated, this, &TrainingSession::onSnapshot,
          Qt::QueuedConnection);
  connect(m_worker, &TrainingWorker::snapshotTaken, this, &TrainingSession::onSnapshot,
          Qt::QueuedConnection);
  connect(m_worker, &TrainingWorker::finished, this, &TrainingSession::onFinished,
          Qt::QueuedConnection);
  m_thread->start();
}

TrainingSession::~TrainingSession() {
  if (m_cancel) m_cancel->store(true);  // the trainer stops after its current step
  m_thread->quit();
  m_thread->wait();
}

bool TrainingSession::start(std::shared_ptr<const std::string> corpus, const TrainOptions& options,
                            int threads) {
  if (m_running) return false;
  m_snapshots.clear();
  TrainingJob job;
  job.run = ++m_run;
  job.corpus = std::move(corpus);
  job.options = options;
  job.threads = threads;
  job.cancel = std::make_shared<std::atomic<bool>>(false);
  m_cancel = job.cancel;
  m_running = true;
  Q_EMIT snapshotsChanged();
  Q_EMIT trainRequested(job);
  return true;
}

void TrainingSession::stop() {
  if (m_running && m_cancel) m_cancel->store(true);
}

void TrainingSession::keep(std::vector<TrainingSnapshot>& snapshots,
                           const TrainingSnapshot& snapshot) {
  auto at = std::lower_bound(snapshots.begin(), snapshots.end(), snapshot.step,
                             [](const TrainingSnapshot& s, int step) { return s.step < step; });
  if (at != snapshots.end() && at->step == snapshot.step)
    *at = snapshot;
  else
    snapshots.insert(at, snapshot);
  if (int(snapshots.size()) > kMaxSnapshots) {
    // Every second one goes, the newest stays: the slider still spans the whole run.
    std::vector<TrainingSnapshot> thinned;
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
      if (i % 2 == 0 || i + 1 == snapshots.size()) thinned.push_back(snapshots[i]);
    }
    snapshots = std::move(thinned);
  }
}

void TrainingSession::onSnapshot(const TrainingSnapshot& snapshot) {
  if (snapshot.run != m_run) return;
  keep(m_snapshots, snapshot);
  Q_EMIT snapshotsChanged();
}

void TrainingSession::onFinished(const TrainingOutcome& outcome) {
  if (outcome.run != m_run) return;
  m_running = false;
  m_cancel.reset();
  if (outcome.error.isEmpty() && outcome.model && outcome.stepsDone > 0) {
    keep(m_snapshots, {outcome.run, outcome.stepsDone, outcome.model});
    Q_EMIT snapshotsChanged();
  }
  Q_EMIT finished(outcome);
}

}  // namespace attnscope::gui
