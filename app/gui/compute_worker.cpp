// SPDX-License-Identifier: GPL-3.0-or-later
#include "compute_worker.h"

#include <QElapsedTimer>

#include <algorithm>
#include <exception>

#include "model_spec_equal.h"

namespace attnscope::gui {

namespace {

/// The bytes of the [layers, batch, heads, query, key] attention tensor a run will return.
/// Tokenizing is cheap next to the forward pass, and exact where a character count would not be
/// (BPE).
uint64_t estimateAttentionBytes(const Model& model, const RunRequest& request) {
  if (request.random) return 0;  // the toy's random input is small by construction
  const ModelInfo info = model.info();
  const auto clampToModel = [&](std::size_t n) {
    return info.maxPositions > 0 ? std::min<std::size_t>(n, std::size_t(info.maxPositions)) : n;
  };
  // A pair adds its tokens (and a separator or two, which the margin of the limit covers).
  const std::size_t pairTokens = request.pair ? model.tokenize(*request.pair).size() : 0;
  std::size_t queries = 0;
  for (const std::string& text : request.texts)
    queries = std::max(queries, clampToModel(model.tokenize(text).size() + pairTokens));
  const std::size_t keys =
      request.context ? clampToModel(model.tokenize(*request.context).size()) : queries;
  return uint64_t(info.layers) * request.texts.size() * uint64_t(info.heads) * queries * keys *
         sizeof(float);
}

}  // namespace

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
    if (job.model) {
      if (job.model != m_model) {
        m_model = job.model;
        m_modelSpec = job.spec;
        outcome.modelInfo = m_model->info();
      }
    } else if (!m_model || !sameModelSpec(m_modelSpec, job.spec)) {
      opening = true;
      m_model.reset();  // free the old weights before allocating the new ones
      m_model = openModel(job.spec);
      m_modelSpec = job.spec;
      outcome.modelInfo = m_model->info();
      opening = false;
    }
    RunRequest request = job.request;
    if (request.pair && !m_model->info().supportsPair) {
      request.pair.reset();
      outcome.notices << tr(
          "This model reads one sentence at a time: the second sentence of the "
          "pair is not used.");
    }
    const uint64_t attentionBytes = estimateAttentionBytes(*m_model, request);
    if (request.keepScores && attentionBytes > job.scoresLimitBytes) {
      request.keepScores = false;
      outcome.notices << tr("Scores are not kept for this input: the attention weights alone take "
                            "%1 MB, and keeping the scores too would double that.")
                             .arg(attentionBytes / (1024 * 1024));
    }
    // The Q/K view reads them: about d_model floats per token and layer, small beside attention.
    request.keepQueryKey = true;
    outcome.result = std::make_shared<const AttentionResult>(m_model->run(request));
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
