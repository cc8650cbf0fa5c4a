// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a GPT-J checkpoint (GPT-J-6B and its fine-tunes), read from
/// config.json with the defaults of transformers' GPTJConfig.
struct GptjConfig {
  int vocabSize = 50400;
  int hiddenSize = 4096;    // n_embd
  int innerSize = 0;        // n_inner; 0 (null): 4 · n_embd
  int numLayers = 28;       // n_layer
  int numHeads = 16;        // n_head
  int maxPositions = 2048;  // n_positions
  int rotaryDims = 64;      // rotary_dim; null: the whole head
  double layerNormEps = 1e-5;
  std::string activation = "gelu_new";  // activation_function
  bool tieWordEmbeddings = false;

  int headDim() const { return hiddenSize / numHeads; }
  int mlpSize() const { return innerSize > 0 ? innerSize : 4 * hiddenSize; }
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field.
  static GptjConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
