// SPDX-License-Identifier: GPL-3.0-or-later
#include "second_model_runner.h"

#include <QThread>

#include "compute_worker.h"

namespace attnscope::gui {

SecondModelRunner::SecondModelRunner(QObject* parent)
    : QObject(parent), m_latest(std::make_shared<std::atomic<quint64>>(0)) {
  m_thread = new QThread(this);
  m_thread->setObjectName(QStringLiteral("attnscope-compare"));
  m_worker = new ComputeWorker(m_latest);
  m_worker->moveToThread(m_thread);
  connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
  connect(this, &SecondModelRunner::runRequested, m_worker, &ComputeWorker::compute,
          Qt::QueuedConnection);
  connect(m_worker, &ComputeWorker::computed, this, &SecondModelRunner::onComputed,
          Qt::QueuedConnection);
  m_thread->start();
}

SecondModelRunner::~SecondModelRunner() {
  cancel();
  m_thread->quit();
  m_thread->wait();
}

void SecondModelRunner::run(ComputeJob job) {
  cancel();
  job.generation = ++m_generation;
  m_latest->store(m_generation);
  job.model = nullptr;  // the second model is opened from its spec by this worker
  job.cancel = std::make_shared<std::atomic<bool>>(false);
  job.request.cancel = job.cancel.get();
  m_cancel = job.cancel;
  Q_EMIT runRequested(job);
}

void SecondModelRunner::cancel() {
  if (m_cancel) m_cancel->store(true);
  m_cancel.reset();
}

void SecondModelRunner::onComputed(const ComputeOutcome& outcome) {
  if (outcome.generation != m_generation) return;  // superseded
  m_cancel.reset();
  Q_EMIT finished(outcome.result, outcome.result ? QString() : outcome.error);
}

}  // namespace attnscope::gui
