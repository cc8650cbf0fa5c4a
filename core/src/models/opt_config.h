// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of an OPT checkpoint (OPT-125m to 66B, Galactica's layout), read from
/// config.json with the defaults of transformers' OPTConfig.
struct OptConfig {
  int vocabSize = 50272;
  int hiddenSize = 768;
  int ffnDim = 3072;
  int numLayers = 12;
  int numHeads = 12;
  int maxPositions = 2048;            // the position table has 2 more rows (OPT's offset)
  int wordEmbedProjDim = 0;           // word_embed_proj_dim; null: hidden_size (no project_in/out)
  bool doLayerNormBefore = true;      // false: post-norm (OPT-350m)
  bool removeFinalLayerNorm = false;  // _remove_final_layer_norm
  bool enableBias = true;
  bool layerNormAffine = true;      // layer_norm_elementwise_affine
  std::string activation = "relu";  // activation_function
  bool tieWordEmbeddings = true;

  static constexpr int kPositionOffset = 2;      // OPTLearnedPositionalEmbedding's offset
  static constexpr double kLayerNormEps = 1e-5;  // nn.LayerNorm's default: not configurable

  int headDim() const { return hiddenSize / numHeads; }
  /// project_in / project_out exist when the word embeddings are narrower or wider (OPT-350m).
  bool projects() const { return wordEmbedProjDim != hiddenSize; }
  /// final_layer_norm after the last layer: pre-norm models only, unless removed.
  bool finalNorm() const { return doLayerNormBefore && !removeFinalLayerNorm; }
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field.
  static OptConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
