// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gptj_config.h"

namespace attnscope {

std::string GptjConfig::describe() const {
  return "gptj: " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads, n_embd " + std::to_string(hiddenSize) + ", n_inner " + std::to_string(mlpSize()) +
         ", rotary_dim " + std::to_string(rotaryDims) + ", vocab_size " + std::to_string(vocabSize);
}

GptjConfig GptjConfig::fromReader(const ConfigReader& c) {
  GptjConfig r;
  // GPTJConfig's own names first; transformers' attribute names are accepted too.
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  r.hiddenSize = c.integer({"n_embd", "hidden_size"}, 1, 1 << 16, r.hiddenSize);
  r.numLayers = c.integer({"n_layer", "num_hidden_layers"}, 1, 1024, r.numLayers);
  r.numHeads = c.integer({"n_head", "num_attention_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("n_head", r.numHeads, "n_embd", r.hiddenSize);
  r.innerSize = c.integer({"n_inner"}, 1, 1 << 18, 0);
  r.maxPositions =
      c.integer({"n_positions", "max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  // GPTJAttention rotates rotary_dim dims of each head (GPTJConfig's default: 64), or the whole
  // head when it is null.
  const bool isNull = c.json().contains("rotary_dim") && c.json()["rotary_dim"].is_null();
  r.rotaryDims = c.integer({"rotary_dim"}, 1, 1 << 16, isNull ? r.headDim() : 64);
  if (r.rotaryDims < 2 || r.rotaryDims % 2 != 0 || r.rotaryDims > r.headDim())
    c.fail("\"rotary_dim\" (" + std::to_string(r.rotaryDims) +
           ") must be an even number of dimensions from 2 to the head size n_embd / n_head (" +
           std::to_string(r.headDim()) + ")");
  r.layerNormEps = c.number("layer_norm_epsilon", 1e-5);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_epsilon\" must be a positive number below 1, got " +
           formatNumber(r.layerNormEps));
  r.activation = c.string("activation_function", "gelu_new");
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", false);
  return r;
}

}  // namespace attnscope
