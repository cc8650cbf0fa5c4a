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

AttentionMask DecoderFamily::windowMask(const LayerContext& ctx, int window) {
  // Tq queries over Tk keys: equal in a run; with a key/value cache (generation) the new queries
  // come after Tk - Tq cached keys.
  const int64_t Tq = ctx.positions.size(0);
  const int64_t Tk =
      ctx.keyLengths && !ctx.keyLengths->empty()
          ? std::max<int64_t>(Tq, *std::max_element(ctx.keyLengths->begin(), ctx.keyLengths->end()))
          : Tq;
  // buildMask applies no window of Tk keys or more: the mask would equal ctx.mask.
  if (window >= Tk) return ctx.mask;
  return deviceMask(*ctx.keyLengths, Tq, Tk, /*causal=*/true, window, ctx.positions.device(),
                    Tk - Tq);
}

std::optional<int64_t> DecoderFamily::endTokenId() const {
  // eos_token_id: one id, or a list (Llama 3's chat ids) whose first is the text's end.
  const nlohmann::json& j = m_config.json();
  const auto it = j.find("eos_token_id");
  if (it == j.end()) return std::nullopt;
  const nlohmann::json& id = it->is_array() && !it->empty() ? it->front() : *it;
  if (!id.is_number_integer() || id.get<int64_t>() < 0) return std::nullopt;
  return id.get<int64_t>();
}

}  // namespace attnscope
