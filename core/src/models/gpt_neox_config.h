// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"
#include "models/llama_config.h"

namespace attnscope {

/// The hyper-parameters of a GPT-NeoX checkpoint (Pythia, GPT-NeoX-20B), read from config.json
/// with the defaults of transformers' GPTNeoXConfig.
struct GptNeoxConfig {
  int vocabSize = 50432;
  int hiddenSize = 6144;
  int intermediateSize = 24576;
  int numLayers = 44;
  int numHeads = 64;
  int maxPositions = 2048;
  double layerNormEps = 1e-5;
  double rotaryPct = 0.25;    // rotary_pct (partial_rotary_factor): share of head_dim rotated
  double rotaryBase = 10000;  // rotary_emb_base (rope_theta)
  RopeScalingConfig ropeScaling;
  std::string hiddenAct = "gelu";
  bool parallelResidual = true;  // use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x))
  bool attentionBias = true;
  bool tieWordEmbeddings = false;

  int headDim() const { return hiddenSize / numHeads; }
  /// int(head_dim * rotary_pct), as GPTNeoXAttention computes rotary_ndims.
  int rotaryDim() const { return static_cast<int>(headDim() * rotaryPct); }
  std::string describe() const;

  /// Throws Error(Io) when unreadable, Error(Format) naming the file and the field.
  static GptNeoxConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
