// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

#include "view_state.h"

namespace attnscope::render {

/// What a view shows under `state`, for export titles: "layer 2, head 3" for one head, "all heads"
/// for the grid, both heads (and sentences) for compare. The window and attnscope-cli export
/// title their files with it. `allLayers`: the alignment view averages every layer; `estimate`:
/// the ablation map is attribution patching.
QString viewSubject(ViewKind kind, const ViewState& state, bool allLayers = false,
                    bool estimate = false);

}  // namespace attnscope::render
