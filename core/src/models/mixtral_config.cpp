// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/mixtral_config.h"

#include <nlohmann/json.hpp>

namespace attnscope {

std::string MixtralConfig::describe() const {
  std::string s = base.describe() + ", " + std::to_string(numExperts) + " experts (top " +
                  std::to_string(topK) + ") of width " + std::to_string(expertIntermediate);
  if (sharedExpertIntermediate > 0)
    s += ", a shared expert of width " + std::to_string(sharedExpertIntermediate);
  return s;
}

MixtralConfig MixtralConfig::fromReader(const ConfigReader& c) {
  MixtralConfig r;
  r.base = LlamaConfig::fromReader(c);
  const std::string& type = r.base.modelType;
  const bool qwen2 = type == "qwen2_moe", qwen = qwen2 || type == "qwen3_moe";
  const bool olmoe = type == "olmoe";
  if (!qwen && !olmoe && type != "mixtral")
    c.fail("\"model_type\" \"" + type + "\" is not mixtral, qwen2_moe, qwen3_moe or olmoe");
  if (olmoe && c.has("clip_qkv"))  // null in the published OLMoE checkpoints
    c.fail("\"clip_qkv\" (clamping q, k and v) is not supported; only null");
  if (qwen2) {
    // Qwen2MoeAttention: q/k/v biases unless qkv_bias is false (transformers 5 reads the key;
    // earlier versions always had them), o_proj without. No q/k norm.
    r.base.qkvBias = c.flag("qkv_bias", true);
    r.base.outputBias = false;
    // Qwen2MoeConfig's default; LlamaConfig's is 2048 (it matters to dynamic rope scaling).
    r.base.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, 32768);
    // transformers' versions disagree on which layers use_sliding_window windows (every layer,
    // those from max_window_layers on, or the even ones below it); every published Qwen1.5-MoE
    // and Qwen2-MoE config has it false.
    if (c.flag("use_sliding_window", false))
      c.fail("\"use_sliding_window\" true is not supported for qwen2_moe; only false");
  }
  const std::string expertsKey = qwen || olmoe ? "num_experts" : "num_local_experts";
  r.numExperts = c.integer({expertsKey}, 1, 1024, qwen2 ? 60 : qwen ? 128 : olmoe ? 64 : 8);
  r.topK = c.integer({"num_experts_per_tok"}, 1, 1024, qwen2 ? 4 : qwen || olmoe ? 8 : 2);
  if (r.topK > r.numExperts)
    c.fail("\"num_experts_per_tok\" (" + std::to_string(r.topK) + ") must be at most \"" +
           expertsKey + "\" (" + std::to_string(r.numExperts) + ")");
  r.normTopK = qwen || olmoe ? c.flag("norm_topk_prob", false) : true;
  r.expertIntermediate = qwen ? c.integer({"moe_intermediate_size"}, 1, 1 << 18, qwen2 ? 1408 : 768)
                              : r.base.intermediateSize;
  if (qwen2)
    r.sharedExpertIntermediate = c.integer({"shared_expert_intermediate_size"}, 1, 1 << 18, 5632);
  r.sparseLayers.assign(static_cast<std::size_t>(r.base.numLayers), true);
  if (qwen) {
    // transformers' Qwen2MoeDecoderLayer and Qwen3MoeDecoderLayer: sparse unless listed in
    // mlp_only_layers, and only every decoder_sparse_step-th layer ((i + 1) % step == 0).
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
