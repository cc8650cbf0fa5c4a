// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a DeBERTa v2/v3 checkpoint (model_type "deberta-v2"), with the
/// defaults of transformers' DebertaV2Config and the getattr defaults its modules read
/// (embedding_size, position_buckets, norm_rel_ebd, share_att_key, conv_kernel_size). Plain
/// types only, so the parser stays in attnscope_base (no LibTorch).
struct DebertaConfig {
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

  int headDim() const { return hiddenSize / numHeads; }
  /// att_span: the relative distances the rel_embeddings cover on each side (position_buckets
  /// when bucketed, else max_relative_positions); the table has 2 * span rows.
  int span() const { return positionBuckets > 0 ? positionBuckets : maxRelativePositions; }
  /// scale_factor = 1 + (c2p) + (p2c): the scores are divided by sqrt(head_dim * scale_factor)
  /// (counted from pos_att_type even without relative_attention, as transformers does).
  int scaleFactor() const { return 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0); }
  bool hasC2p() const { return relativeAttention && c2p; }
  bool hasP2c() const { return relativeAttention && p2c; }
  /// "24 layers, 24 heads, hidden 1536, ..." for load errors.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent, and for conv_kernel_size > 0 (DeBERTa-v2-xlarge's ConvLayer after
  /// layer 0), which is not implemented.
  static DebertaConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
