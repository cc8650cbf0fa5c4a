// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/opt_config.h"

namespace attnscope {

std::string OptConfig::describe() const {
  return "opt: " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads, hidden_size " + std::to_string(hiddenSize) + ", ffn_dim " +
         std::to_string(ffnDim) + ", word_embed_proj_dim " + std::to_string(wordEmbedProjDim) +
         ", vocab_size " + std::to_string(vocabSize) +
         (doLayerNormBefore ? ", pre-norm" : ", post-norm");
}

OptConfig OptConfig::fromReader(const ConfigReader& c) {
  OptConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  // d_model: the name of transformers' first OPTConfig.
  r.hiddenSize = c.integer({"hidden_size", "d_model"}, 1, 1 << 16, r.hiddenSize);
  r.ffnDim = c.integer({"ffn_dim"}, 1, 1 << 18, r.ffnDim);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 1024, r.numLayers);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  r.wordEmbedProjDim = c.integer({"word_embed_proj_dim"}, 1, 1 << 16, r.hiddenSize);
  r.doLayerNormBefore = c.flag("do_layer_norm_before", true);
  r.removeFinalLayerNorm = c.flag("_remove_final_layer_norm", false);
  r.enableBias = c.flag("enable_bias", true);
  r.layerNormAffine = c.flag("layer_norm_elementwise_affine", true);
  r.activation = c.string("activation_function", "relu");
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", true);
  return r;
}

}  // namespace attnscope
