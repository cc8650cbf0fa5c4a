// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/olmo_config.h"

namespace attnscope {

std::string OlmoConfig::describe() const {
  return base.describe() + (clipQkv > 0 ? ", clip_qkv " + formatNumber(clipQkv) : "");
}

OlmoConfig OlmoConfig::fromReader(const ConfigReader& c) {
  OlmoConfig r;
  const std::string type = c.string("model_type", "olmo");
  if (type != "olmo") c.fail("\"model_type\" \"" + type + "\" is not olmo");
  r.base = LlamaConfig::fromReader(c);    // no rms_norm_eps: the norms are OlmoLayerNorm's
  r.base.modelType = "olmo";              // also when config.json leaves model_type out
  r.base.mlpBias = false;                 // OlmoMLP has no biases, whatever mlp_bias says
  r.clipQkv = c.number("clip_qkv", 0.0);  // null: no clipping
  if (c.has("clip_qkv") && (!(r.clipQkv > 0) || r.clipQkv > 1e30))
    c.fail("\"clip_qkv\" must be a positive number or null, got " + formatNumber(r.clipQkv));
  return r;
}

}  // namespace attnscope
