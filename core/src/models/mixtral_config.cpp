// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/mixtral_config.h"

#include <nlohmann/json.hpp>

namespace attnscope {

std::string MixtralConfig::describe() const {
  return base.describe() + ", " + std::to_string(numExperts) + " experts (top " +
         std::to_string(topK) + ") of width " + std::to_string(expertIntermediate);
}

MixtralConfig MixtralConfig::fromReader(const ConfigReader& c) {
  MixtralConfig r;
  r.base = LlamaConfig::fromReader(c);
  const std::string& type = r.base.modelType;
  const bool qwen = type == "qwen3_moe", olmoe = type == "olmoe";
  if (!qwen && !olmoe && type != "mixtral")
    c.fail("\"model_type\" \"" + type + "\" is not mixtral, qwen3_moe or olmoe");
  if (olmoe && c.has("clip_qkv"))  // null in the published OLMoE checkpoints
    c.fail("\"clip_qkv\" (clamping q, k and v) is not supported; only null");
  const std::string expertsKey = qwen || olmoe ? "num_experts" : "num_local_experts";
  r.numExperts = c.integer({expertsKey}, 1, 1024, qwen ? 128 : olmoe ? 64 : 8);
  r.topK = c.integer({"num_experts_per_tok"}, 1, 1024, qwen || olmoe ? 8 : 2);
  if (r.topK > r.numExperts)
    c.fail("\"num_experts_per_tok\" (" + std::to_string(r.topK) + ") must be at most \"" +
           expertsKey + "\" (" + std::to_string(r.numExperts) + ")");
  r.normTopK = qwen || olmoe ? c.flag("norm_topk_prob", false) : true;
  r.expertIntermediate =
      qwen ? c.integer({"moe_intermediate_size"}, 1, 1 << 18, 768) : r.base.intermediateSize;
  r.sparseLayers.assign(static_cast<std::size_t>(r.base.numLayers), true);
  if (qwen) {
    // transformers' Qwen3MoeDecoderLayer: sparse unless listed in mlp_only_layers, and only every
    // decoder_sparse_step-th layer ((i + 1) % step == 0).
    const int step = c.integer({"decoder_sparse_step"}, 1, 1024, 1);
    for (int i = 0; i < r.base.numLayers; ++i)
      r.sparseLayers[static_cast<std::size_t>(i)] = (i + 1) % step == 0;
    if (c.has("mlp_only_layers")) {
      const nlohmann::json& dense = c.json()["mlp_only_layers"];
      if (!dense.is_array())
        c.fail("\"mlp_only_layers\" must be a list of layer indices, got " +
               dense.dump().substr(0, 200));
      for (const nlohmann::json& i : dense) {
        if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= r.base.numLayers)
          c.fail("\"mlp_only_layers\" must hold layer indices from 0 to " +
                 std::to_string(r.base.numLayers - 1) + ", got " + i.dump().substr(0, 60));
        r.sparseLayers[static_cast<std::size_t>(i.get<int64_t>())] = false;
      }
    }
  }
  return r;
}

}  // namespace attnscope
