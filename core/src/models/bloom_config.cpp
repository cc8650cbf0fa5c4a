// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/bloom_config.h"

namespace attnscope {

std::string BloomConfig::describe() const {
  return "bloom: " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads, hidden_size " + std::to_string(hiddenSize) + ", vocab_size " +
         std::to_string(vocabSize);
}

BloomConfig BloomConfig::fromReader(const ConfigReader& c) {
  BloomConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  r.hiddenSize = c.integer({"hidden_size", "n_embed"}, 1, 1 << 16);
  r.numLayers = c.integer({"n_layer", "num_hidden_layers"}, 1, 1024);
  r.numHeads = c.integer({"n_head", "num_attention_heads"}, 1, 1024);
  c.requireDivides("n_head", r.numHeads, "hidden_size", r.hiddenSize);
  r.layerNormEps = c.number("layer_norm_epsilon", 1e-5);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_epsilon\" must be a positive number below 1, got " +
           std::to_string(r.layerNormEps));
  r.residualPostLayernorm = c.flag("apply_residual_connection_post_layernorm", false);
  return r;
}

}  // namespace attnscope
