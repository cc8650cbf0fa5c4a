// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

#include "attnscope/model_spec.h"
#include "run_options.h"
#include "view_state.h"

namespace attnscope::gui {

/// Everything a .attnscope file restores: the text, the model, how it runs and what is selected.
struct Session {
  QString text;
  ModelSpec model;
  RunOptions run;
  render::ViewState view;
  render::ViewKind currentView = render::ViewKind::Heatmap;
};

}  // namespace attnscope::gui
