// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "models/config_reader.h"

namespace attnscope {

/// LongRoPE (rope_scaling type "longrope", formerly "su"): one rescaling factor per rotary
/// frequency, the short list for sequences up to original_max_position_embeddings and the long
/// one past it, and cos/sin multiplied by one attention factor.
struct LongRopeConfig {
  bool enabled = false;
  std::vector<double> shortFactor;  // [rotaryDim / 2]
  std::vector<double> longFactor;   // [rotaryDim / 2]
  double attentionFactor = 1.0;     // cos and sin are multiplied by it (so q·k by its square)
};

/// The hyper-parameters of a Phi-3 / Phi-3.5 / Phi-4-mini checkpoint (model_type phi3), read from a
/// Hugging Face config.json with the defaults of transformers' Phi3Config. Plain types only
/// (attnscope_base).
struct Phi3Config {
  int vocabSize = 32064;
  int hiddenSize = 3072;
  int intermediateSize = 8192;
  int numLayers = 32;
  int numHeads = 32;
  int numKvHeads = 32;
  int headDim = 96;    // head_dim when given, else hidden_size / num_attention_heads
  int rotaryDim = 96;  // int(head_dim · partial_rotary_factor): Phi-4-mini rotates 3/4 of each head
  int maxPositions = 4096;
  int originalMaxPositions = 4096;  // the context trained before LongRoPE stretched it
  double rmsNormEps = 1e-5;
  double ropeTheta = 10000.0;
  LongRopeConfig longRope;
  std::string hiddenAct = "silu";
  bool tieWordEmbeddings = false;
  int slidingWindow = 0;  // > 0: every layer's query sees this many keys, its own included

  /// "phi3: 2 layers, 4 heads (2 kv), ...", for messages.
  std::string describe() const;
  /// Throws Error(Format) naming the file and the field for a value of the wrong type, out of
  /// range or inconsistent ("rope_scaling.short_factor has 3 entries, want 4 (rotary dims / 2)").
  static Phi3Config fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
