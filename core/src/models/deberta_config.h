// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a DeBERTa checkpoint: v2/v3 (model_type "deberta-v2") with the
/// defaults of transformers' DebertaV2Config and the getattr defaults its modules read
/// (embedding_size, position_buckets, norm_rel_ebd, share_att_key, conv_kernel_size, conv_groups,
/// conv_act), or v1 ("deberta") with DebertaConfig's (its modules read no buckets, no shared
/// keys, no rel_embeddings norm, no ConvLayer; talking_head is refused). Plain types only, so the
/// parser stays in attnscope_base (no LibTorch).
struct DebertaConfig {
  /// V1: fused in_proj with q_bias and v_bias, pos_proj / pos_q_proj, scale_factor
  /// 1 + len(pos_att_type).
  enum class Flavour { V2, V1 };
  Flavour flavour = Flavour::V2;
  int vocabSize = 128100;
  int hiddenSize = 1536;
  int embeddingSize = 1536;  // embedding_size (default hidden_size): != hidden -> embed_proj
  int numLayers = 24;
  int numHeads = 24;
  int intermediateSize = 6144;
  int maxPositions = 512;  // max_position_embeddings
  int typeVocabSize = 0;   // > 0: token_type_embeddings
  int padTokenId = 0;
  std::string hiddenAct = "gelu";
  double layerNormEps = 1e-7;
  bool positionBiasedInput = true;  // absolute position_embeddings added to the words
  bool relativeAttention = false;   // rel_embeddings and the c2p / p2c terms
  int maxRelativePositions = 512;   // max_relative_positions; < 1 in the file: max_positions
  int positionBuckets = -1;         // > 0: log-bucketed relative positions, 2 * buckets rows
  bool relEmbeddingNorm = false;    // norm_rel_ebd contains "layer_norm": encoder.LayerNorm
  bool shareAttKey = false;         // c2p / p2c reuse key_proj / query_proj
  bool c2p = false, p2c = false;    // pos_att_type ("p2p" and others are not read by v2)
  int posAttTypes = 0;              // pos_att_type's entries: v1's scale_factor counts them all
  int convKernelSize = 0;           // v2: > 0 -> encoder.conv (ConvLayer) after layer 0
  int convGroups = 1;               // conv_groups
  std::string convAct = "tanh";     // conv_act

  int headDim() const { return hiddenSize / numHeads; }
  /// att_span: the relative distances the rel_embeddings cover on each side (position_buckets
  /// when bucketed, else max_relative_positions); the table has 2 * span rows.
  int span() const { return positionBuckets > 0 ? positionBuckets : maxRelativePositions; }
  bool v1() const { return flavour == Flavour::V1; }
  /// scale_factor: the scores are divided by sqrt(head_dim * scale_factor); v2 counts c2p and p2c
  /// in pos_att_type, v1 every entry ("p2p" too, which adds no term in transformers), both even
  /// without relative_attention, as transformers does.
  int scaleFactor() const { return v1() ? 1 + posAttTypes : 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0); }
  bool hasC2p() const { return relativeAttention && c2p; }
  bool hasP2c() const { return relativeAttention && p2c; }
  /// "24 layers, 24 heads, hidden 1536, ..." for load errors.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent, and for v1's talking_head, which is not implemented. The flavour is
  /// model_type's ("deberta": V1, anything else V2) unless given.
  static DebertaConfig fromReader(const ConfigReader& reader);
  static DebertaConfig fromReader(const ConfigReader& reader, Flavour flavour);
};

}  // namespace attnscope
