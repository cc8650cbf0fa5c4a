// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a DistilBERT checkpoint (model_type distilbert), read from config.json
/// in DistilBertConfig's spelling (dim, n_layers, n_heads, hidden_dim, activation) or BERT's.
/// Plain types only, so the parser stays in attnscope_base (no LibTorch).
struct DistilBertConfig {
  int vocabSize = 30522;
  int hiddenSize = 768;         // dim
  int numLayers = 6;            // n_layers
  int numHeads = 12;            // n_heads
  int intermediateSize = 3072;  // hidden_dim
  int maxPositions = 512;
  std::string activation = "gelu";

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent ("n_heads (5) must divide dim (32)").
  static DistilBertConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
