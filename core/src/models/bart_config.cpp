// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/bart_config.h"

namespace attnscope {

std::string BartConfig::describe() const {
  return std::string(flavour == Flavour::Bart ? "bart" : "marian") + ": " +
         std::to_string(encoderLayers) + "+" + std::to_string(decoderLayers) + " layers, " +
         std::to_string(numHeads) + " heads, d_model " + std::to_string(dModel) + ", ffn " +
         std::to_string(encoderFfnDim) + "/" + std::to_string(decoderFfnDim) + ", vocab_size " +
         std::to_string(vocabSize);
}

BartConfig BartConfig::fromReader(const ConfigReader& c, Flavour f) {
  const bool marian = f == Flavour::Marian;
  BartConfig r;
  r.flavour = f;
  r.padTokenId = c.integer({"pad_token_id"}, 0, 1 << 22, marian ? 0 : 1);
  r.decoderStartTokenId =
      c.integer({"decoder_start_token_id"}, 0, 1 << 22, marian ? r.padTokenId : 2);
  r.eosTokenId = c.integer({"eos_token_id"}, 0, 1 << 22, marian ? 0 : 2);
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  // Each indexes the embedding table (the decoder's first input, padding, generation's stop).
  c.requireBelow("decoder_start_token_id", r.decoderStartTokenId, "vocab_size", r.vocabSize);
  c.requireBelow("pad_token_id", r.padTokenId, "vocab_size", r.vocabSize);
  c.requireBelow("eos_token_id", r.eosTokenId, "vocab_size", r.vocabSize);
  r.dModel = c.integer({"d_model"}, 2, 1 << 16);
  r.encoderLayers = c.integer({"encoder_layers"}, 1, 256);
  r.decoderLayers = c.integer({"decoder_layers"}, 1, 256);
  r.numHeads = c.integer({"encoder_attention_heads"}, 1, 1024);
  const int decoderHeads = c.integer({"decoder_attention_heads"}, 1, 1024);
  // One head count per model (ModelInfo::heads); every published BART and Marian has it.
  if (decoderHeads != r.numHeads)
    c.fail("decoder_attention_heads (" + std::to_string(decoderHeads) +
           ") must equal encoder_attention_heads (" + std::to_string(r.numHeads) + ")");
  c.requireDivides("encoder_attention_heads", r.numHeads, "d_model", r.dModel);
  r.encoderFfnDim = c.integer({"encoder_ffn_dim"}, 1, 1 << 18);
  r.decoderFfnDim = c.integer({"decoder_ffn_dim"}, 1, 1 << 18);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 20, 1024);
  r.activation = c.string("activation_function", marian ? "swish" : "gelu");
  r.scaleEmbedding = c.flag("scale_embedding", marian);
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", true);
  // Pre-norm variants (mBART's normalize_before, a final layer_norm) and Marian checkpoints
  // with separate decoder embeddings have other tensors and formulas: refused, not guessed.
  if (c.flag("normalize_before", false) || c.flag("add_final_layer_norm", false))
    c.fail(
        "normalize_before / add_final_layer_norm (pre-norm layers, as mBART) are not "
        "supported; bart and marian are post-norm");
  if (!c.flag("share_encoder_decoder_embeddings", true))
    c.fail(
        "share_encoder_decoder_embeddings false (separate decoder embeddings) is not "
        "supported");
  if (marian && r.dModel % 2 != 0)
    c.fail("d_model must be even for sinusoidal positions, got " + std::to_string(r.dModel));
  return r;
}

}  // namespace attnscope
