// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"
#include "models/llama_config.h"

namespace attnscope {

// Phi-1/1.5/2 (phi.cpp) and StableLM (stablelm.cpp): LayerNorm decoders with partial rotary and
// an optional per-head q/k LayerNorm, parsed by one file.

/// The hyper-parameters of a Phi-1 / Phi-1.5 / Phi-2 checkpoint (model_type phi), read from a
/// Hugging Face config.json with the defaults of transformers' PhiConfig. Plain types only
/// (attnscope_base).
struct PhiConfig {
  int vocabSize = 51200;
  int hiddenSize = 2048;
  int intermediateSize = 8192;
  int numLayers = 24;
  int numHeads = 32;
  int numKvHeads = 32;  // num_key_value_heads: null or absent is num_attention_heads
  int maxPositions = 2048;
  double layerNormEps = 1e-5;
  double ropeTheta = 10000.0;
  double partialRotaryFactor = 0.5;  // Phi-2: 0.4 (32 of 80 dims)
  RopeScalingConfig ropeScaling;
  std::string hiddenAct = "gelu_new";
  bool qkLayernorm = false;  // qk_layernorm: a LayerNorm over head_dim on q and k, before rotary
  bool tieWordEmbeddings = false;

  int headDim() const { return hiddenSize / numHeads; }
  /// int(head_dim * partial_rotary_factor), as PhiAttention computes rotary_ndims.
  int rotaryDim() const { return static_cast<int>(headDim() * partialRotaryFactor); }
  /// "phi: 2 layers, 4 heads (4 kv), hidden_size 32, ...", for messages.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field for a value of the wrong type, out of
  /// range or inconsistent.
  static PhiConfig fromReader(const ConfigReader& reader);
};

/// The hyper-parameters of a StableLM checkpoint (model_type stablelm: StableLM-3B-4E1T,
/// StableLM 2), read with the defaults of transformers' StableLmConfig.
struct StableLmConfig {
  int vocabSize = 50304;
  int hiddenSize = 2560;
  int intermediateSize = 6912;
  int numLayers = 32;
  int numHeads = 32;
  int numKvHeads = 32;
  int maxPositions = 4096;
  double layerNormEps = 1e-5;
  double ropeTheta = 10000.0;
  double partialRotaryFactor = 0.25;
  RopeScalingConfig ropeScaling;
  std::string hiddenAct = "silu";
  bool qkvBias = false;           // use_qkv_bias: q/k/v projections have a bias (StableLM 2)
  bool qkLayernorm = false;       // qk_layernorm: one LayerNorm (no bias) per head over head_dim
  bool parallelResidual = false;  // use_parallel_residual: x + attn(ln(x)) + mlp(ln(x))
  bool tieWordEmbeddings = false;

  int headDim() const { return hiddenSize / numHeads; }
  /// int(partial_rotary_factor * head_dim), as StableLmAttention computes rotary_ndims.
  int rotaryDim() const { return static_cast<int>(headDim() * partialRotaryFactor); }
  std::string describe() const;

  static StableLmConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
