// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QMetaType>

#include <memory>
#include <vector>

#include "attnscope/generation.h"
#include "attnscope/token.h"

namespace attnscope::render {

/// The generation step the Step view shows: plain data from the window's document (or anyone
/// holding GenerationSteps), so the view never knows where the step came from.
struct GenerationFrame {
  std::shared_ptr<const GenerationStep> step;  // null: no generation, or no step selected
  int index = -1;                              // the step's index among the generated tokens
  int count = 0;                               // generated tokens in all
  int promptLength = 0;                        // tokens[0, promptLength) are the prompt's
  // The prompt's tokens and the generated ones up to and including step->token: step->attention
  // [L, H, T_step] reads keys tokens[0, T_step), and tokens[T_step] is the new token.
  std::vector<Token> tokens;

  bool empty() const { return !step || step->attention.shape.size() != 3; }
};

}  // namespace attnscope::render

Q_DECLARE_METATYPE(attnscope::render::GenerationFrame)
