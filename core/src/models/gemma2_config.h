// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "models/config_reader.h"
#include "models/llama_config.h"

namespace attnscope {

/// The hyper-parameters of a Gemma 2 or Gemma 3 checkpoint (model_type gemma2, gemma3_text, and
/// the text_config of a gemma3 folder), read from a Hugging Face config.json with the defaults of
/// transformers' Gemma2Config and Gemma3TextConfig. Plain types only (attnscope_base).
struct Gemma2Config {
  std::string modelType = "gemma2";  // gemma2 | gemma3_text | gemma3 (its text part)
  int vocabSize = 256000;
  int hiddenSize = 2304;
  int intermediateSize = 9216;
  int numLayers = 26;
  int numHeads = 8;
  int numKvHeads = 4;
  int headDim = 256;  // independent of hidden_size / num_attention_heads
  int maxPositions = 8192;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;          // global (full-attention) layers
  double ropeLocalTheta = 10000.0;     // sliding layers: Gemma 3's rope_local_base_freq; Gemma 2:
                                       // rope_theta (one rotary for every layer)
  RopeScalingConfig ropeScaling;       // global layers
  RopeScalingConfig ropeLocalScaling;  // sliding layers: none in Gemma 3, Gemma 2's one scaling
  std::string hiddenAct = "gelu_pytorch_tanh";
  bool attentionBias = false;  // q/k/v/o biases
  bool qkNorm = false;         // Gemma 3: per-head (1 + w) RMSNorm of q and k before rotary
  bool tieWordEmbeddings = true;
  double queryPreAttnScalar = 256;  // scores are scaled by query_pre_attn_scalar^-0.5, not by
                                    // head_dim^-0.5 (Gemma 2 27B: 144 with head_dim 128)
  double attnSoftcap = 0;           // > 0: scores = cap·tanh(scores / cap) before the mask
  double finalSoftcap = 0;          // > 0: logits = cap·tanh(logits / cap)
  int slidingWindow = 4096;         // keys a sliding layer's query sees, its own included; 0: none
  std::vector<bool> slidingLayers;  // [numLayers]: true for the local (sliding-window) layers

  /// Whether layer `i` attends within the sliding window.
  bool windowed(int i) const {
    return slidingWindow > 0 && slidingLayers[static_cast<std::size_t>(i)];
  }
  /// "gemma2: 2 layers, 4 heads (2 kv), ...", for messages.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field when a value is of the wrong type, out of
  /// range or inconsistent ("layer_types has 3 entries for 4 layers").
  static Gemma2Config fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
