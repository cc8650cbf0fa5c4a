// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/run_request.h"
#include "view_state.h"

namespace attnscope::gui {

/// One request from the document to the worker. `request.cancel` points into `cancel`, which the
/// job keeps alive; the document sets it when a newer edit supersedes this job.
struct ComputeJob {
  quint64 generation = 0;
  ModelSpec spec;
  /// An in-memory model (a training snapshot) to run instead of opening spec.source; the worker
  /// keeps it while the pointer is the same, as it keeps an opened model while the spec is.
  std::shared_ptr<Model> model;
  RunRequest request;
  std::shared_ptr<std::atomic<bool>> cancel;
  /// Above this estimate of the attention tensor the pre-softmax scores are not kept, which
  /// halves the memory of long inputs to big models (GPT-2 at 1024 tokens).
  uint64_t scoresLimitBytes = 256ull * 1024 * 1024;
  /// The layers the user is looking at (the heatmap's, compare's second): when every layer's
  /// attention would not fit under request.limits, the worker keeps these and their neighbours.
  std::vector<int> focusLayers;
};

/// What came back for one job: a result, or an error for the banner.
struct ComputeOutcome {
  quint64 generation = 0;
  render::ResultPtr result;  // null on error
  QString error;             // empty on success
  ErrorKind errorKind = ErrorKind::Internal;
  bool openFailed = false;             // the job's model could not be opened (nothing ran)
  std::optional<ModelInfo> modelInfo;  // set when the model was (re)opened for this job
  QStringList notices;                 // the worker's own notices (scores not kept)
  MemoryEstimate estimate;             // of the run as made (total 0 when the model cannot say)
  uint64_t memoryLimitBytes = 0;       // the limit it was checked against
  double computeMs = 0;                // wall time in the worker, opening included
};

}  // namespace attnscope::gui

Q_DECLARE_METATYPE(attnscope::gui::ComputeJob)
Q_DECLARE_METATYPE(attnscope::gui::ComputeOutcome)
Q_DECLARE_METATYPE(attnscope::render::ResultPtr)
Q_DECLARE_METATYPE(attnscope::render::ViewState)
Q_DECLARE_METATYPE(attnscope::ModelSpec)
Q_DECLARE_METATYPE(attnscope::ModelInfo)
