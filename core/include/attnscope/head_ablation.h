// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attnscope/float_tensor.h"
#include "attnscope/run_request.h"
#include "attnscope/token.h"

namespace attnscope {

/// What to ablate: the first text of `run` (batch item 0), on its device, under its limits and
/// cancel flag (polled between layers).
struct AblationRequest {
  RunRequest run;
  /// Encoders: the position of the mask token whose fill is read; -1: the first mask token.
  /// Decoders read the next token after the last position and refuse a position.
  int maskPosition = -1;
  /// Attribution patching (one forward, one backward) instead of the exact L·H reruns.
  bool estimate = false;
  /// Called after each head with (heads done, L·H); the estimate calls it once, at the end.
  std::function<void(int done, int total)> progress;
};

/// Each head's effect on the model's own top prediction: the probability of the unablated top-1
/// token (the next token after the last position, or the fill of a mask) when the head's output
/// (its attention @ v, before the output projection) is set to zero.
///
/// Exact: every head is ablated in its own forward pass, which reuses the unchanged inputs of the
/// layers below the ablated one. Estimate (attribution patching): with m_h the factor a head's
/// output z_h is multiplied by, Δ log p ≈ −∂ log p / ∂m_h = −Σ z_h · ∂ log p / ∂z_h, for every
/// head from one forward and one backward pass; first order, so only an estimate.
struct HeadAblation {
  std::vector<Token> tokens;  // batch item 0 as the model saw it
  Token target;               // the unablated top-1 token (its id, text and label)
  int position = 0;           // the position whose prediction is read
  bool maskFill = false;      // true: a mask fill (encoders); false: the next token (decoders)
  bool estimate = false;      // true: attribution patching, not exact ablation
  int layers = 0, heads = 0;
  double baseline = 0;  // p(target), nothing ablated
  // [layers, heads]: p(target) with the head's output zeroed. Estimate: the first-order
  // baseline · (1 + Δ log p), clamped to [0, 1] where the linearisation is poor (it can leave it).
  FloatTensor probabilities;
  // [layers, heads]: log p(target | head ablated) − log p(target). Estimate: −Σ z · ∂ log p / ∂z.
  FloatTensor logProbChange;
  std::vector<std::string> notices;  // what the user must know (the text was cut, say)
  double milliseconds = 0;           // the whole computation, tokenising included

  float probability(int layer, int head) const {
    return probabilities.data[static_cast<std::size_t>(layer) * heads + head];
  }
  float change(int layer, int head) const {
    return logProbChange.data[static_cast<std::size_t>(layer) * heads + head];
  }
};

}  // namespace attnscope
