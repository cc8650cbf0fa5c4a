// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "attention_view.h"

namespace attnscope::render {

/// Creates the view of a kind; the GUI builds its tabs and the CLI its exports through this.
AttentionView* createView(ViewKind kind, QWidget* parent = nullptr);

}  // namespace attnscope::render
