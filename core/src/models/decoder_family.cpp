// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/decoder_family.h"

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

}  // namespace attnscope
