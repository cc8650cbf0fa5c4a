// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a Bloom checkpoint, read from config.json with the defaults of
/// transformers' BloomConfig (which also accepts n_layer, n_head and n_embed).
struct BloomConfig {
  int vocabSize = 250880;
  int hiddenSize = 64;
  int numLayers = 2;
  int numHeads = 8;
  double layerNormEps = 1e-5;
  bool residualPostLayernorm = false;  // apply_residual_connection_post_layernorm

  int headDim() const { return hiddenSize / numHeads; }
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field.
  static BloomConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
