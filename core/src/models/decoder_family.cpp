// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/decoder_family.h"

#include <algorithm>

#include "models/layer_stack.h"

namespace attnscope {

RotaryOptions rotaryOptions(const RopeScalingConfig& s, int rotaryDim, double theta,
                            int maxPositions) {
  RotaryOptions o;
  o.rotaryDim = rotaryDim;
  o.theta = theta;
  o.maxPositions = maxPositions;
  o.scaling.type = s.type == "linear"    ? RopeScaling::Type::Linear
                   : s.type == "dynamic" ? RopeScaling::Type::Dynamic
                   : s.type == "llama3"  ? RopeScaling::Type::Llama3
                                         : RopeScaling::Type::None;
  o.scaling.factor = s.factor;
  o.scaling.lowFreqFactor = s.lowFreqFactor;
  o.scaling.highFreqFactor = s.highFreqFactor;
  o.scaling.originalMaxPositions = s.originalMaxPositions;
  return o;
}

int rotaryMaxPositions(const RopeScalingConfig& scaling, int maxPositions) {
  if (scaling.type == "dynamic")
    return static_cast<int>(std::min(1e8, maxPositions * scaling.factor));
  return maxPositions;
}

torch::Tensor DecoderFamily::windowMask(const LayerContext& ctx, int window) {
  const int64_t T = ctx.positions.size(0);
  // buildMask applies no window of T keys or more: the mask would equal ctx.mask.
  if (window >= T) return ctx.mask;
  return deviceMask(*ctx.keyLengths, T, T, /*causal=*/true, window, ctx.positions.device());
}

}  // namespace attnscope
