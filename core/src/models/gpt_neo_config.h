// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a GPT-Neo checkpoint (GPT-Neo 125M to 2.7B), read from config.json
/// with the defaults of transformers' GPTNeoConfig.
struct GptNeoConfig {
  int vocabSize = 50257;
  int hiddenSize = 2048;
  int innerSize = 0;  // intermediate_size; 0 (null): 4 · hidden_size
  int numLayers = 24;
  int numHeads = 16;
  int maxPositions = 2048;
  int windowSize = 256;  // the keys a local layer sees: its own and window_size - 1 before it
  double layerNormEps = 1e-5;
  std::string activation = "gelu_new";  // activation_function
  bool tieWordEmbeddings = true;
  /// Per layer: true where attention_types makes it "local" (GPT-Neo's default alternates
  /// global, local).
  std::vector<bool> localLayers;

  int headDim() const { return hiddenSize / numHeads; }
  int mlpSize() const { return innerSize > 0 ? innerSize : 4 * hiddenSize; }
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field.
  static GptNeoConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
