// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/modernbert_config.h"

#include <nlohmann/json.hpp>

namespace attnscope {
namespace {

/// One layer type's entry of transformers 5's rope_parameters: its rope_theta; only the default
/// rotary (ModernBERT's checkpoints scale none).
void readRopeEntry(const ConfigReader& p, double* theta) {
  const std::string type = p.string("rope_type", "default");
  if (type != "default")
    p.fail("\"rope_type\" \"" + type + "\" is not supported for ModernBERT (only \"default\")");
  *theta = p.number("rope_theta", *theta);
}

}  // namespace

std::string ModernBertConfig::describe() const {
  return std::to_string(numLayers) + " layers, " + std::to_string(numHeads) + " heads, hidden " +
         std::to_string(hiddenSize) + ", intermediate " + std::to_string(intermediateSize) +
         ", vocabulary " + std::to_string(vocabSize) + ", local_attention " +
         std::to_string(localAttention) + " on the layers i % " +
         std::to_string(globalAttnEveryNLayers) + " != 0";
}

ModernBertConfig ModernBertConfig::fromReader(const ConfigReader& c) {
  ModernBertConfig r;
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16, r.hiddenSize);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18, r.intermediateSize);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 256, r.numLayers);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  if (r.headDim() % 2 != 0)
    c.fail("hidden_size / num_attention_heads (" + std::to_string(r.headDim()) +
           ") must be even for rotary positions");
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  // pad_token_id only names the tokenizer's padding; null in some configs.
  if (c.json().contains("pad_token_id") && !c.json()["pad_token_id"].is_null()) {
    r.padTokenId = c.integer({"pad_token_id"}, 0, 1 << 22);
    c.requireBelow("pad_token_id", r.padTokenId, "vocab_size", r.vocabSize);
  }
  r.hiddenAct = c.string("hidden_activation", r.hiddenAct);
  r.classifierAct = c.string("classifier_activation", r.classifierAct);
  r.normEps = c.number("norm_eps", r.normEps);
  if (!(r.normEps > 0) || r.normEps > 1)
    c.fail("\"norm_eps\" must be a positive number below 1, got " + formatNumber(r.normEps));
  r.normBias = c.flag("norm_bias", false);
  r.attentionBias = c.flag("attention_bias", false);
  r.mlpBias = c.flag("mlp_bias", false);
  r.classifierBias = c.flag("classifier_bias", false);
  r.decoderBias = c.flag("decoder_bias", true);
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", true);
  r.localAttention = c.integer({"local_attention"}, 1, 1 << 24, r.localAttention);
  r.globalAttnEveryNLayers =
      c.integer({"global_attn_every_n_layers"}, 1, 1 << 20, r.globalAttnEveryNLayers);
  // transformers' attention windows layer i when i % global_attn_every_n_layers != 0 and rotates
  // it with the layer_types entry's rope_theta: layer_types, when given, must say the same.
  r.slidingLayers.resize(static_cast<std::size_t>(r.numLayers));
  for (int i = 0; i < r.numLayers; ++i)
    r.slidingLayers[static_cast<std::size_t>(i)] = i % r.globalAttnEveryNLayers != 0;
  if (c.has("layer_types") && !c.json()["layer_types"].is_null()) {
    const nlohmann::json& t = c.json()["layer_types"];
    if (!t.is_array() || t.size() != r.slidingLayers.size())
      c.fail("\"layer_types\" must list one type for each of the " + std::to_string(r.numLayers) +
             " layers");
    for (std::size_t i = 0; i < r.slidingLayers.size(); ++i) {
      const std::string want = r.slidingLayers[i] ? "sliding_attention" : "full_attention";
      if (t[i] != want)
        c.fail("\"layer_types\"[" + std::to_string(i) + "] must be \"" + want +
               "\" (global_attn_every_n_layers " + std::to_string(r.globalAttnEveryNLayers) +
               "), got " + t[i].dump());
    }
  }
  // The checkpoints' spelling (global_rope_theta, local_rope_theta), then transformers 5's
  // rope_parameters per layer type.
  r.globalRopeTheta = c.number("global_rope_theta", r.globalRopeTheta);
  r.localRopeTheta = c.number("local_rope_theta", r.localRopeTheta);
  if (c.has("rope_scaling") && !c.json()["rope_scaling"].is_null())
    c.fail("\"rope_scaling\" is not supported for ModernBERT");
  if (c.has("rope_parameters") && !c.json()["rope_parameters"].is_null()) {
    const ConfigReader p = c.section("rope_parameters");
    if (p.has("full_attention")) readRopeEntry(p.section("full_attention"), &r.globalRopeTheta);
    if (p.has("sliding_attention"))
      readRopeEntry(p.section("sliding_attention"), &r.localRopeTheta);
  }
  // The frequencies are float32, as in transformers: a larger base overflows the conversion.
  for (const double theta : {r.globalRopeTheta, r.localRopeTheta}) {
    if (!(theta > 1) || theta > kMaxRopeBase)
      c.fail(
          "\"global_rope_theta\" and \"local_rope_theta\" must be above 1 and at most 1e30, got " +
          formatNumber(theta));
  }
  return r;
}

}  // namespace attnscope
