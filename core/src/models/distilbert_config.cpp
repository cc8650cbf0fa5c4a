// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/distilbert_config.h"

namespace attnscope {

DistilBertConfig DistilBertConfig::fromReader(const ConfigReader& c) {
  DistilBertConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  r.hiddenSize = c.integer({"dim", "hidden_size"}, 1, 1 << 16);
  r.numLayers = c.integer({"n_layers", "num_hidden_layers"}, 1, 256);
  r.numHeads = c.integer({"n_heads", "num_attention_heads"}, 1, 1024);
  c.requireDivides("n_heads", r.numHeads, "dim", r.hiddenSize);
  r.intermediateSize = c.integer({"hidden_dim", "intermediate_size"}, 1, 1 << 18);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 20);
  r.activation = c.string("activation", "gelu");
  return r;
}

}  // namespace attnscope
