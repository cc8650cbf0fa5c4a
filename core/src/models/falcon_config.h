// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"
#include "models/llama_config.h"

namespace attnscope {

/// How Falcon's fused query_key_value lays out q, k and v on its last axis.
enum class FalconQkvLayout {
  /// new_decoder_architecture (Falcon-40B/180B, Falcon 2): num_kv_heads groups, each
  /// [q … q k v] with num_attention_heads / num_kv_heads queries.
  Grouped,
  /// multi_query (Falcon-7B): [q_0 … q_{H-1} k v], one key/value head shared by every query.
  MultiQuery,
  /// neither (Falcon-RW): per head [q_h k_h v_h], as GPT-NeoX and Bloom.
  PerHead,
};

/// The hyper-parameters of a Falcon checkpoint (model_type falcon: Falcon-7B/40B/180B, Falcon 2,
/// Falcon-RW), read from config.json with the defaults of transformers' FalconConfig.
struct FalconConfig {
  int vocabSize = 65024;
  int hiddenSize = 4544;  // hidden_size (n_embed, which transformers prefers when given)
  int numLayers = 32;
  int numHeads = 71;
  int numKvHeads = 71;           // key/value heads in the projection: num_kv_heads (grouped), 1
                                 // (multi-query), num_attention_heads (per head)
  int ffnHiddenSize = 4 * 4544;  // ffn_hidden_size; null: 4 · hidden_size
  int maxPositions = 2048;
  double layerNormEps = 1e-5;
  double ropeTheta = 10000.0;
  RopeScalingConfig ropeScaling;
  std::string activation = "gelu";
  bool alibi = false;  // ALiBi instead of rotary positions
  bool newDecoderArchitecture = false;
  bool multiQuery = true;       // ignored with new_decoder_architecture
  bool parallelAttn = true;     // x + attn(ln(x)) + mlp(ln(x)); false: sequential
  int numLnInParallelAttn = 1;  // 2: ln_attn and ln_mlp (new architecture's default); 1: one
                                // input_layernorm read by both
  bool bias = false;            // every linear layer has a bias
  bool tieWordEmbeddings = true;

  int headDim() const { return hiddenSize / numHeads; }
  FalconQkvLayout layout() const {
    return newDecoderArchitecture ? FalconQkvLayout::Grouped
           : multiQuery           ? FalconQkvLayout::MultiQuery
                                  : FalconQkvLayout::PerHead;
  }
  /// query_key_value's output width: (H + 2 · Hkv) · head_dim.
  int qkvWidth() const { return (numHeads + 2 * numKvHeads) * headDim(); }
  /// ln_attn and ln_mlp instead of input_layernorm (and post_attention_layernorm).
  bool twoNorms() const { return newDecoderArchitecture && numLnInParallelAttn == 2; }
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field.
  static FalconConfig fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
