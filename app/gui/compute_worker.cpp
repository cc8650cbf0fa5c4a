// SPDX-License-Identifier: GPL-3.0-or-later
#include "compute_worker.h"

#include <QElapsedTimer>

#include <exception>

#include "model_spec_equal.h"

namespace attnscope::gui {

ComputeWorker::ComputeWorker(std::shared_ptr<const std::atomic<quint64>> latestGeneration,
                             QObject* parent)
    : QObject(parent), m_latest(std::move(latestGeneration)) {}

void ComputeWorker::compute(const ComputeJob& job) {
  // Typing queues a job per debounce; only the newest one is worth the time.
  if (job.generation < m_latest->load()) return;

  QElapsedTimer timer;
  timer.start();
  ComputeOutcome outcome;
  outcome.generation = job.generation;
  bool opening = false;
  try {
    if (!m_model || !sameModelSpec(m_modelSpec, job.spec)) {
      opening = true;
      m_model.reset();  // free the old weights before allocating the new ones
      m_model = openModel(job.spec);
      m_modelSpec = job.spec;
      outcome.modelInfo = m_model->info();
      opening = false;
    }
    outcome.result = std::make_shared<const AttentionResult>(m_model->run(job.request));
  } catch (const Error& e) {
    outcome.error = QString::fromStdString(e.what());
    outcome.errorKind = e.kind();
  } catch (const std::bad_alloc&) {
    outcome.error = tr("out of memory: choose a smaller model or shorter text");
    outcome.errorKind = ErrorKind::ResourceLimit;
  } catch (const std::exception& e) {
    // The core wraps library failures in Error; anything else is a bug, shown rather than fatal.
    outcome.error = tr("internal error: %1").arg(QString::fromStdString(e.what()));
    outcome.errorKind = ErrorKind::Internal;
  }
  if (opening) outcome.error = tr("Could not open the model: %1").arg(outcome.error);
  outcome.computeMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  Q_EMIT computed(outcome);
}

}  // namespace attnscope::gui
