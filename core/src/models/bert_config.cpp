// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/bert_config.h"

namespace attnscope {

BertConfig BertConfig::fromReader(const ConfigReader& c, Flavour flavour) {
  const bool albert = flavour == Flavour::Albert;
  BertConfig r;
  r.flavour = flavour;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 256);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 20);
  r.typeVocabSize = c.integer({"type_vocab_size"}, 0, 1 << 10, 2);
  r.embeddingSize = c.integer({"embedding_size"}, 1, 1 << 16, albert ? 128 : r.hiddenSize);
  if (albert) {
    r.numHiddenGroups = c.integer({"num_hidden_groups"}, 1, 256, 1);
    r.innerGroupNum = c.integer({"inner_group_num"}, 1, 64, 1);
    c.requireDivides("num_hidden_groups", r.numHiddenGroups, "num_hidden_layers", r.numLayers);
  }
  r.layerNormEps = c.number("layer_norm_eps", 1e-12);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_eps\" must be a positive number below 1, got " +
           std::to_string(r.layerNormEps));
  // relative_key and relative_key_query add a distance_embedding term to the scores; reading
  // such a model with absolute positions alone would give wrong attention without a word.
  const std::string positions = c.string("position_embedding_type", "absolute");
  if (positions != "absolute")
    c.fail("\"position_embedding_type\" \"" + positions +
           "\" is not supported (only \"absolute\")");
  r.hiddenAct = c.string("hidden_act", albert ? "gelu_new" : "gelu");
  if (!albert)
    r.padTokenId = c.integer({"pad_token_id"}, 0, 1 << 22, flavour == Flavour::Roberta ? 1 : 0);
  return r;
}

}  // namespace attnscope
