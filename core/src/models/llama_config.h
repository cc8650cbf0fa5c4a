// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// config.json's `rope_scaling` as read, before the rotary block turns it into frequencies. Plain
/// types only, so the parser stays in attnscope_base (no LibTorch).
struct RopeScalingConfig {
  std::string type;  // "" (none or "default"), "linear", "dynamic" or "llama3"
  double factor = 1.0;
  double lowFreqFactor = 1.0;       // llama3
  double highFreqFactor = 4.0;      // llama3
  int originalMaxPositions = 8192;  // llama3: original_max_position_embeddings
};

/// The hyper-parameters of a Llama-family checkpoint (model_type llama, mistral, qwen2, qwen3,
/// gemma), read from a Hugging Face config.json with the defaults of transformers' config classes
/// (GemmaConfig's for gemma).
struct LlamaConfig {
  std::string modelType = "llama";
  int vocabSize = 32000;
  int hiddenSize = 4096;
  int intermediateSize = 11008;
  int numLayers = 32;
  int numHeads = 32;
  int numKvHeads = 32;  // num_key_value_heads: < numHeads is grouped-query attention
  int headDim = 128;    // head_dim when given (Qwen3), else hidden_size / num_attention_heads
  int maxPositions = 2048;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  double partialRotaryFactor = 1.0;  // fraction of each head's dimensions that rotate
  RopeScalingConfig ropeScaling;
  std::string hiddenAct = "silu";
  bool qkvBias = false;            // q/k/v projections have a bias (Qwen2 always; attention_bias)
  bool outputBias = false;         // o_proj has a bias (attention_bias; never in Qwen2)
  bool mlpBias = false;            // gate/up/down have a bias (Llama's mlp_bias)
  bool qkNorm = false;             // per-head RMSNorm of q and k before rotary (Qwen3)
  bool tieWordEmbeddings = false;  // lm_head shares embed_tokens
  bool normUnitOffset = false;     // RMSNorm gains are (1 + weight) (Gemma)
  bool scaleEmbeddings = false;    // embeddings times sqrt(hidden_size) (Gemma)
  int slidingWindow = 0;           // > 0: the layers from slidingFromLayer on see this many keys
  int slidingFromLayer = 0;        // Qwen2/3: max_window_layers; Mistral: 0 (every layer)

  int rotaryDim() const { return static_cast<int>(headDim * partialRotaryFactor) / 2 * 2; }
  /// Whether layer `i` attends within the sliding window.
  bool windowed(int i) const { return slidingWindow > 0 && i >= slidingFromLayer; }
  /// "llama: 2 layers, 4 heads (2 kv), hidden 32, head_dim 8", for messages.
  std::string describe() const;

  /// Throws Error(Io) when unreadable, Error(Format) naming the file and the field when a value
  /// is missing, of the wrong type or inconsistent ("num_key_value_heads (3) must divide
  /// num_attention_heads (4)").
  static LlamaConfig fromFile(const std::string& path);
  static LlamaConfig fromReader(const ConfigReader& reader);
};

/// config.json's rope_scaling object (either key spelling: "type" or "rope_type"); throws naming
/// the field for an unknown type or a bad factor. Shared by every rotary family.
RopeScalingConfig readRopeScaling(const ConfigReader& reader);

}  // namespace attnscope
