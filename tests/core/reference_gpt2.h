// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/safetensors.h"

namespace attnscope::test {

/// GPT-2's forward pass for one sequence in plain double-precision loops, from weights under
/// their bare Hugging Face names: an independent check of the torch implementation.
struct ReferenceGpt2 {
  std::vector<double> attention;   // [layers, heads, T, T]
  std::vector<double> valueNorms;  // [layers, heads, T, T] ‖α_ij · (v_j^h W_O^h)‖ (Kobayashi)
  std::vector<double> hidden;      // [T, C] after ln_f
  std::vector<double> lastLogits;  // [V] for the last position
};

/// One head's output (its attention @ v, before c_proj) multiplied by `factor`: 0 ablates it.
struct HeadScale {
  int layer = -1;  // -1: no head is scaled
  int head = 0;
  double factor = 1.0;
};

ReferenceGpt2 referenceGpt2(const std::vector<NamedTensor>& weights, int layers, int heads,
                            const std::vector<int64_t>& ids, double eps = 1e-5,
                            HeadScale scaled = {});

}  // namespace attnscope::test
