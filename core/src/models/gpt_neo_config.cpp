// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gpt_neo_config.h"

namespace attnscope {
namespace {

/// attention_types, [[["global", "local"], 12]]: each entry a pattern of layer kinds and how many
/// times it repeats (GPTNeoConfig.expand_attention_types_params). -> one flag per layer, true:
/// local.
std::vector<bool> expandAttentionTypes(const ConfigReader& c, int numLayers) {
  const std::string key = "attention_types";
  // GPTNeoConfig's default: global, local, ... over 24 layers.
  const nlohmann::json types =
      c.has(key) ? c.json()[key] : nlohmann::json::parse("[[[\"global\", \"local\"], 12]]");
  const auto bad = [&](const std::string& why) {
    c.fail("\"" + key + "\" " + why + ", got " + types.dump().substr(0, 200));
  };
  if (!types.is_array()) bad("must be a list of [[\"global\" or \"local\", ...], count] pairs");
  std::vector<bool> r;
  for (const nlohmann::json& entry : types) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_array() || entry[0].empty() ||
        !entry[1].is_number_integer() || entry[1].get<int64_t>() < 1 ||
        entry[1].get<int64_t>() > 1024)
      bad("must be a list of [[\"global\" or \"local\", ...], count] pairs, count from 1 to 1024");
    for (int64_t n = 0; n < entry[1].get<int64_t>(); ++n) {
      for (const nlohmann::json& kind : entry[0]) {
        if (kind != "global" && kind != "local") bad("names a layer kind other than global, local");
        r.push_back(kind == "local");
        if (r.size() > 1024) bad("gives more than 1024 layers");
      }
    }
  }
  if (r.size() != static_cast<std::size_t>(numLayers))
    c.fail("\"attention_types\" gives " + std::to_string(r.size()) + " layers, but num_layers is " +
           std::to_string(numLayers));
  return r;
}

}  // namespace

std::string GptNeoConfig::describe() const {
  int local = 0;
  for (bool l : localLayers) local += l;
  return "gpt_neo: " + std::to_string(numLayers) + " layers (" + std::to_string(local) +
         " local, window_size " + std::to_string(windowSize) + "), " + std::to_string(numHeads) +
         " heads, hidden_size " + std::to_string(hiddenSize) + ", vocab_size " +
         std::to_string(vocabSize);
}

GptNeoConfig GptNeoConfig::fromReader(const ConfigReader& c) {
  GptNeoConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16, r.hiddenSize);
  r.numLayers = c.integer({"num_layers", "num_hidden_layers"}, 1, 1024, r.numLayers);
  r.numHeads = c.integer({"num_heads", "num_attention_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_heads", r.numHeads, "hidden_size", r.hiddenSize);
  r.innerSize = c.integer({"intermediate_size"}, 1, 1 << 18, 0);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  r.windowSize = c.integer({"window_size"}, 1, 1 << 24, r.windowSize);
  r.layerNormEps = c.number("layer_norm_epsilon", 1e-5);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_epsilon\" must be a positive number below 1, got " +
           formatNumber(r.layerNormEps));
  r.activation = c.string("activation_function", "gelu_new");
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", true);
  r.localLayers = expandAttentionTypes(c, r.numLayers);
  return r;
}

}  // namespace attnscope
