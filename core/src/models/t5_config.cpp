// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/t5_config.h"

namespace attnscope {

std::string T5Config::describe() const {
  return "t5: " + std::to_string(numLayers) + "+" + std::to_string(numDecoderLayers) + " layers, " +
         std::to_string(numHeads) + " heads of d_kv " + std::to_string(dKv) + ", d_model " +
         std::to_string(dModel) + ", d_ff " + std::to_string(dFf) + (gated ? " (gated)" : "") +
         ", vocab_size " + std::to_string(vocabSize);
}

T5Config T5Config::fromReader(const ConfigReader& c) {
  T5Config r;
  r.modelType = c.string("model_type", "t5");
  r.decoderStartTokenId = c.integer({"decoder_start_token_id"}, 0, 1 << 22, 0);
  r.eosTokenId = c.integer({"eos_token_id"}, 0, 1 << 22, 1);
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  // Both index the embedding table (the decoder's first input, generation's stop).
  c.requireBelow("decoder_start_token_id", r.decoderStartTokenId, "vocab_size", r.vocabSize);
  c.requireBelow("eos_token_id", r.eosTokenId, "vocab_size", r.vocabSize);
  r.dModel = c.integer({"d_model"}, 1, 1 << 16);
  r.dKv = c.integer({"d_kv"}, 1, 1 << 12);
  r.dFf = c.integer({"d_ff"}, 1, 1 << 18);
  r.numLayers = c.integer({"num_layers"}, 1, 256);
  r.numDecoderLayers = c.integer({"num_decoder_layers"}, 1, 256, r.numLayers);
  r.numHeads = c.integer({"num_heads"}, 1, 1024);
  r.numBuckets = c.integer({"relative_attention_num_buckets"}, 2, 1 << 12, 32);
  r.maxDistance = c.integer({"relative_attention_max_distance"}, 1, 1 << 20, 128);
  // Bidirectional buckets are exact below a quarter of num_buckets (max_exact) and logarithmic
  // above it, by log(distance / max_exact) / log(max_distance / max_exact): that needs
  // max_distance above max_exact.
  if (r.numBuckets / 4 < 1 || r.maxDistance <= r.numBuckets / 4)
    c.fail("relative_attention_max_distance (" + std::to_string(r.maxDistance) +
           ") must be above a quarter of relative_attention_num_buckets (" +
           std::to_string(r.numBuckets) + ")");
  r.layerNormEps = c.number("layer_norm_epsilon", 1e-6);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_epsilon\" must be a positive number below 1, got " +
           std::to_string(r.layerNormEps));
  // transformers: "gated-gelu" means gelu_new; otherwise "[gated-]<ACT2FN name>".
  const std::string proj = c.string("feed_forward_proj", "relu");
  const std::size_t dash = proj.find('-');
  if (dash != std::string::npos && proj.substr(0, dash) != "gated")
    c.fail("\"feed_forward_proj\" \"" + proj +
           "\" must be an activation or gated-<activation> (relu, gated-gelu)");
  r.gated = dash != std::string::npos;
  r.activation = proj == "gated-gelu" ? "gelu_new" : proj.substr(dash + 1);
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", true);
  return r;
}

}  // namespace attnscope
