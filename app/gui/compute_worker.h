// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>

#include <atomic>
#include <memory>
#include <vector>

#include "compute_job.h"

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

 public:
  /// "0, 3–7": ascending layer numbers with runs joined, for notices.
  static QString layerRanges(const std::vector<int>& layers);
  /// "820 MiB", "8.0 GiB".
  static QString formatBytes(uint64_t bytes);

 Q_SIGNALS:
  void computed(const attnscope::gui::ComputeOutcome& outcome);

 private:
  std::shared_ptr<const std::atomic<quint64>> m_latest;
  std::shared_ptr<Model> m_model;
  ModelSpec m_modelSpec;
};

}  // namespace attnscope::gui
