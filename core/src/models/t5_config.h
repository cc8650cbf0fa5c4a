// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a T5 checkpoint (model_type t5, mt5: T5, T5 v1.1, Flan-T5, mT5), read
/// from config.json with the defaults of transformers' T5Config. Plain types only, so the parser
/// stays in attnscope_base (no LibTorch): the family turns `activation` into an Activation.
struct T5Config {
  std::string modelType = "t5";  // "t5" or "mt5"
  int vocabSize = 32128;
  int dModel = 512;
  int dKv = 64;  // each head's width: num_heads * d_kv need not be d_model
  int dFf = 2048;
  int numLayers = 6;
  int numDecoderLayers = 6;  // num_decoder_layers, else num_layers
  int numHeads = 8;
  int numBuckets = 32;    // relative_attention_num_buckets
  int maxDistance = 128;  // relative_attention_max_distance
  double layerNormEps = 1e-6;
  std::string activation = "relu";  // from feed_forward_proj; "gated-gelu" means gelu_new
  bool gated = false;               // feed_forward_proj "gated-<act>": wi_0 (activated) times wi_1
  bool tieWordEmbeddings = true;    // lm_head shares `shared`, rescaled by d_model^-0.5
  int decoderStartTokenId = 0;      // the pad token
  int eosTokenId = 1;

  /// "t5: 2+3 layers, 2 heads of d_kv 6, d_model 16, d_ff 20 (gated), vocab_size 301", for
  /// messages.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent ("relative_attention_max_distance (4) must be above a quarter of
  /// relative_attention_num_buckets (32)").
  static T5Config fromReader(const ConfigReader& reader);
};

}  // namespace attnscope
