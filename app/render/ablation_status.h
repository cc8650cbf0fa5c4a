// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QMetaType>
#include <QString>

#include <memory>

#include "attnscope/head_ablation.h"

namespace attnscope::render {

/// Where the head ablation of the current text stands: what the document holds and the
/// ablation view draws. Plain data, so it crosses from the window's document to the view (and
/// from the CLI to an export) without either knowing the other.
struct AblationStatus {
  enum class Phase {
    Idle,       // nothing run for this text yet
    Running,    // in the worker; `done` of `total` heads
    Done,       // `ablation` holds the map
    Failed,     // the core refused or failed: `message` says why
    Cancelled,  // the user stopped it (or a new text did) before it finished
  };
  Phase phase = Phase::Idle;
  bool estimate = false;    // attribution patching (one pass) instead of the exact reruns
  bool cancelling = false;  // Running, and Cancel was pressed: waiting for the worker to stop
  int done = 0, total = 0;  // heads done of L·H (the estimate reports once, at the end)
  int item = 0;             // the batch item ablated
  std::shared_ptr<const HeadAblation> ablation;  // Done
  QString message;                               // Failed: the reason, for the user
};

}  // namespace attnscope::render

Q_DECLARE_METATYPE(attnscope::render::AblationStatus)
