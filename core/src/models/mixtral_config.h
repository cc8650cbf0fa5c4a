// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "models/config_reader.h"
#include "models/llama_config.h"

namespace attnscope {

/// The hyper-parameters of a mixture-of-experts decoder whose attention is Llama's (model_type
/// mixtral: Mixtral 8x7B, 8x22B; qwen2_moe: Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B; qwen3_moe:
/// Qwen3-30B-A3B, 235B-A22B; olmoe: OLMoE-1B-7B), read from a Hugging Face config.json with the
/// defaults of transformers' MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig and OlmoeConfig. Plain
/// types only (attnscope_base).
struct MixtralConfig {
  LlamaConfig base;                  // attention, norms, rotary, vocabulary: LlamaConfig's reader
  int numExperts = 8;                // num_local_experts (Mixtral), num_experts (Qwen-MoE, OLMoE)
  int topK = 2;                      // num_experts_per_tok
  bool normTopK = true;              // the k weights renormalised to sum to 1: always in Mixtral,
                                     // norm_topk_prob in Qwen-MoE and OLMoE (default false)
  int expertIntermediate = 0;        // each expert's width: intermediate_size (Mixtral, OLMoE),
                                     // moe_intermediate_size (Qwen-MoE)
  int sharedExpertIntermediate = 0;  // Qwen2-MoE's shared expert (shared_expert_intermediate_size),
                                     // gated by sigmoid(shared_expert_gate(x)); 0: none
  std::vector<bool> sparseLayers;    // [numLayers]: false for Qwen-MoE's dense layers
                                     // (mlp_only_layers, decoder_sparse_step)

  /// "mixtral: 2 layers, ..., 4 experts (top 2)", for messages.
  std::string describe() const;
  /// Throws Error(Format) naming the file and the field ("num_experts_per_tok (5) must be at most
  /// num_local_experts (4)").
  static MixtralConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
