// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>

#include <atomic>
#include <memory>
#include <vector>

#include "ablation_job.h"
#include "compute_job.h"
#include "generation_job.h"

namespace attnscope::gui {

/// Lives on the compute thread: opens the model a job names (keeping it while the spec is
/// unchanged, since opening is the slow part for big models) and runs it. Jobs older than the
/// document's latest generation are skipped without running.
class ComputeWorker final : public QObject {
  Q_OBJECT
 public:
  explicit ComputeWorker(std::shared_ptr<const std::atomic<quint64>> latestGeneration,
                         QObject* parent = nullptr);

 public Q_SLOTS:
  void compute(const attnscope::gui::ComputeJob& job);
  /// Head ablation with the model of the last job (reopened only if the spec differs). A job
  /// whose cancel flag is already set when it would have to open a model is dropped unopened.
  void ablate(const attnscope::gui::AblationJob& job);
  /// One generation step with the model of the last job (reopened only if the spec differs),
  /// through the key/value cache kept from the job before when it continues the same generation.
  void generateStep(const attnscope::gui::GenerationJob& job);

 public:
  /// "0, 3–7": ascending layer numbers with runs joined, for notices.
  static QString layerRanges(const std::vector<int>& layers);
  /// "820 MiB", "8.0 GiB".
  static QString formatBytes(uint64_t bytes);

 Q_SIGNALS:
  void computed(const attnscope::gui::ComputeOutcome& outcome);
  /// From the worker thread, during compute(): `done` of `total` layers.
  void computeProgress(quint64 generation, int done, int total);
  /// From the worker thread, during compute(): the first layer's attention while the others
  /// compute (RunRequest::preview), for long runs only.
  void computePreview(quint64 generation, const attnscope::render::ResultPtr& preview);
  /// From the worker thread, during ablate(): `done` of `total` heads.
  void ablationProgress(quint64 generation, int done, int total);
  void ablated(const attnscope::gui::AblationOutcome& outcome);
  void generated(const attnscope::gui::GenerationOutcome& outcome);

 private:
  /// Makes m_model the job's: the in-memory `model` if given, else `spec` opened unless it is
  /// already. Returns whether it opened or switched (then the caller reports the new info).
  bool useModel(const ModelSpec& spec, const std::shared_ptr<Model>& model);
  bool needsModel(const ModelSpec& spec, const std::shared_ptr<Model>& model) const;
  /// Drops what the open model cannot read (a target, a pair) and asks for what the views need.
  void fitToModel(RunRequest& request) const;
  /// The run; when the model refuses the logit lens (no head), the run without it and a notice.
  AttentionResult runWithLens(const RunRequest& request, ComputeOutcome& outcome) const;
  /// Keeps the request within the memory limit (no scores, fewer kept layers, no value norms),
  /// with a notice for each thing given up; returns the estimate of what is left.
  MemoryEstimate fitToMemory(const ComputeJob& job, RunRequest& request,
                             ComputeOutcome& outcome) const;

  std::shared_ptr<const std::atomic<quint64>> m_latest;
  std::shared_ptr<Model> m_model;
  ModelSpec m_modelSpec;
  // The generation in progress (GenerationJob::id), with the model and the cancel flag it points
  // into, kept alive as long as it is.
  std::unique_ptr<Generation> m_generation;
  std::shared_ptr<Model> m_generationModel;
  std::shared_ptr<std::atomic<bool>> m_generationCancel;
  quint64 m_generationId = 0;
};

}  // namespace attnscope::gui
