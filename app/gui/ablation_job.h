// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QMetaType>
#include <QString>

#include <atomic>
#include <memory>

#include "attnscope/error.h"
#include "attnscope/head_ablation.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"

namespace attnscope::gui {

/// One head ablation, from the document to the worker: the last computation's model and request
/// (one text: the batch item shown), with a cancel flag of its own that `request.run.cancel`
/// points into. The worker forwards the core's progress with the job's generation.
struct AblationJob {
  quint64 generation = 0;
  ModelSpec spec;
  std::shared_ptr<Model> model;  // an in-memory model instead of opening spec.source
  AblationRequest request;       // request.progress is set by the worker
  std::shared_ptr<std::atomic<bool>> cancel;
};

/// What came back for one ablation: the map, or an error (ErrorKind::Cancelled when stopped).
struct AblationOutcome {
  quint64 generation = 0;
  std::shared_ptr<const HeadAblation> ablation;  // null on error
  QString error;
  ErrorKind errorKind = ErrorKind::Internal;
};

}  // namespace attnscope::gui

Q_DECLARE_METATYPE(attnscope::gui::AblationJob)
Q_DECLARE_METATYPE(attnscope::gui::AblationOutcome)
