// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QMetaType>
#include <QString>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/generation.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"

namespace attnscope::gui {

/// One generation step, from the document's GenerationController to the worker. The worker keeps
/// the core's Generation (and its key/value cache) between jobs of the same `id` whose generated
/// ids so far equal `generated`; otherwise (a new id, a cut back to an earlier step, a stop in the
/// middle of a step) it starts again from the prompt and replays `generated` as forced tokens,
/// which gives the same cache, then runs the step.
struct GenerationJob {
  quint64 id = 0;
  ModelSpec spec;
  std::shared_ptr<Model> model;    // an in-memory model instead of opening spec.source
  GenerationRequest request;       // request.cancel is set by the worker from `cancel`
  std::vector<int64_t> generated;  // the ids generated before this step, in order
  StepOptions options;
  std::shared_ptr<std::atomic<bool>> cancel;  // polled between layers; set by Stop
};

/// What one step produced, or why it failed (ErrorKind::Cancelled after Stop).
struct GenerationOutcome {
  quint64 id = 0;
  int index = 0;                               // the step's index among the generated tokens
  std::shared_ptr<const GenerationStep> step;  // null on error
  std::vector<Token> promptTokens;             // the prompt's tokens
  bool canStep = false;                        // whether another step fits after this one
  double milliseconds = 0;                     // the job's wall time in the worker, replay included
  QString error;
  ErrorKind errorKind = ErrorKind::Internal;
};

}  // namespace attnscope::gui

Q_DECLARE_METATYPE(attnscope::gui::GenerationJob)
Q_DECLARE_METATYPE(attnscope::gui::GenerationOutcome)
