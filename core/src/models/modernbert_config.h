// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a ModernBERT checkpoint (model_type modernbert), with the defaults of
/// transformers' ModernBertConfig (ModernBERT-base). Plain types only, so the parser stays in
/// attnscope_base (no LibTorch).
struct ModernBertConfig {
  int vocabSize = 50368;
  int hiddenSize = 768;
  int intermediateSize = 1152;  // Wi is twice as wide: input | gate
  int numLayers = 22;
  int numHeads = 12;
  int maxPositions = 8192;
  int padTokenId = 50283;              // below vocab_size when given; the forward does not read it
  std::string hiddenAct = "gelu";      // hidden_activation
  std::string classifierAct = "gelu";  // classifier_activation: the masked-LM head's dense
  double normEps = 1e-5;
  bool normBias = false;        // every LayerNorm's bias
  bool attentionBias = false;   // Wqkv, Wo
  bool mlpBias = false;         // Wi, Wo
  bool classifierBias = false;  // head.dense
  bool decoderBias = true;      // decoder.bias
  bool tieWordEmbeddings = true;
  int localAttention = 128;  // the local layers' total window: keys within ±localAttention/2
  int globalAttnEveryNLayers = 3;
  double globalRopeTheta = 160000.0;  // rope_theta of the full-attention layers
  double localRopeTheta = 10000.0;    // rope_theta of the sliding-window layers
  std::vector<bool> slidingLayers;    // per layer: local (layer % every != 0, or layer_types)

  int headDim() const { return hiddenSize / numHeads; }
  /// Each query of a local layer sees the keys within this distance (transformers:
  /// |i - j| <= local_attention // 2).
  int windowRadius() const { return localAttention / 2; }
  bool windowed(int layer) const { return slidingLayers[static_cast<std::size_t>(layer)]; }
  /// "22 layers, 12 heads, hidden 768, ..." for load errors.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent ("num_attention_heads (5) must divide hidden_size (32)").
  static ModernBertConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
