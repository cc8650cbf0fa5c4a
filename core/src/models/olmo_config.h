// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"
#include "models/llama_config.h"

namespace attnscope {

/// The hyper-parameters of an OLMo 1 checkpoint (model_type olmo: OLMo-1B-hf, OLMo-7B-hf,
/// OLMo-1.7-7B-hf), read with the defaults of transformers' OlmoConfig. Plain types only
/// (attnscope_base).
struct OlmoConfig {
  LlamaConfig base;    // sizes, heads, rotary, biases, tying: LlamaConfig's reader
  double clipQkv = 0;  // clip_qkv: q, k and v clamped to [-clip, clip]; 0: null (no clipping)

  /// OlmoLayerNorm's epsilon: fixed, config.json has no field for it.
  static constexpr double kLayerNormEps = 1e-5;

  /// "olmo: 2 layers, ..., clip_qkv 8", for messages.
  std::string describe() const;
  /// Throws Error(Format) naming the file and the field.
  static OlmoConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
