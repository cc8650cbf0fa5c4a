// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "models/config_reader.h"

namespace attnscope {

/// The hyper-parameters of a BART or Marian checkpoint (model_type bart, marian), read from
/// config.json with the defaults of transformers' BartConfig and MarianConfig. Plain types only,
/// so the parser stays in attnscope_base (no LibTorch).
struct BartConfig {
  /// Which config class's defaults apply: Marian's activation is swish, its embeddings are scaled,
  /// it starts decoding with its pad token and has sinusoidal positions (an even d_model).
  enum class Flavour { Bart, Marian };

  Flavour flavour = Flavour::Bart;
  int vocabSize = 50265;
  int dModel = 1024;
  int encoderLayers = 12;
  int decoderLayers = 12;
  int numHeads = 16;  // encoder_attention_heads, equal to decoder_attention_heads
  int encoderFfnDim = 4096;
  int decoderFfnDim = 4096;
  int maxPositions = 1024;
  int padTokenId = 1;
  int decoderStartTokenId = 2;      // Marian: pad_token_id
  int eosTokenId = 2;               // Marian: 0
  std::string activation = "gelu";  // activation_function; Marian: swish
  bool scaleEmbedding = false;      // token embeddings times sqrt(d_model); Marian: true
  bool tieWordEmbeddings = true;    // lm_head shares `shared`

  int headDim() const { return dModel / numHeads; }
  /// "bart: 1+2 layers, 2 heads, d_model 8, ffn 12/12, vocab_size 301", for messages.
  std::string describe() const;

  /// Throws Error(Format) naming the file and the field when a value is missing, of the wrong
  /// type or inconsistent, and for the variants whose tensors and formulas differ (pre-norm
  /// layers, separate decoder embeddings): refused, not guessed.
  static BartConfig fromReader(const ConfigReader& reader, Flavour flavour);
};

}  // namespace attnscope
