// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/float_tensor.h"
#include "attnscope/safetensors.h"
#include "attnscope/toy_config.h"

namespace attnscope::test {

/// The expected result of one attention layer, computed with plain loops in double precision
/// from the model's exported weights: no torch op is involved, so it checks the engine
/// independently.
struct ReferenceResult {
  std::vector<double> attention;  // [B, H, Tq, Tk]
  std::vector<double> output;     // [B, Tq, d_model]
};

/// x: [B, Tq, in], context (optional): [B, Tk, in]. Keys at or past keyLengths[b] are padding.
ReferenceResult referenceAttention(const ToyConfig& config, const std::vector<NamedTensor>& weights,
                                   const FloatTensor& x, const FloatTensor* context,
                                   const std::vector<int>& keyLengths);

}  // namespace attnscope::test
