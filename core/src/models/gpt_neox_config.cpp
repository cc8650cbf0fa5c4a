// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt_neox_config.h"

namespace attnscope {

std::string GptNeoxConfig::describe() const {
  return "gpt_neox: " + std::to_string(numLayers) + " layers, " + std::to_string(numHeads) +
         " heads, hidden_size " + std::to_string(hiddenSize) + ", intermediate_size " +
         std::to_string(intermediateSize) + ", vocab_size " + std::to_string(vocabSize);
}

GptNeoxConfig GptNeoxConfig::fromReader(const ConfigReader& c) {
  GptNeoxConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 1024);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, 2048);
  r.layerNormEps = c.number("layer_norm_eps", 1e-5);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_eps\" must be a positive number below 1, got " +
           std::to_string(r.layerNormEps));
  // transformers later renamed rotary_pct / rotary_emb_base; Pythia's files use the old names.
  const std::string pctKey = c.has("rotary_pct") ? "rotary_pct" : "partial_rotary_factor";
  r.rotaryPct = c.number(pctKey, 0.25);
  if (!(r.rotaryPct > 0) || r.rotaryPct > 1 || r.rotaryDim() < 2 || r.rotaryDim() % 2 != 0)
    c.fail("\"" + pctKey + "\" (" + std::to_string(r.rotaryPct) + ") must rotate an even number " +
           "of dimensions from 2 to head_dim (" + std::to_string(r.headDim()) + ")");
  const std::string baseKey = c.has("rotary_emb_base") ? "rotary_emb_base" : "rope_theta";
  r.rotaryBase = c.number(baseKey, 10000.0);
  if (!(r.rotaryBase > 1) || r.rotaryBase > kMaxRopeBase)
    c.fail("\"" + baseKey + "\" must be above 1 and at most 1e30, got " +
           formatNumber(r.rotaryBase));
  r.ropeScaling = readRopeScaling(c);
  r.hiddenAct = c.string("hidden_act", "gelu");
  r.parallelResidual = c.flag("use_parallel_residual", true);
  r.attentionBias = c.flag("attention_bias", true);
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", false);
  return r;
}

}  // namespace attnscope
