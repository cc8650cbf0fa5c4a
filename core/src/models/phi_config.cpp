// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/phi_config.h"

namespace attnscope {
namespace {

/// What PhiConfig and StableLmConfig read alike: sizes, heads, positions, layer_norm_eps,
/// rope_theta, rope_scaling and partial_rotary_factor (whose rotary dims must be even, from 2 to
/// head_dim). `type` is the family's model_type, refused when config.json names another.
template <typename Config>
void readPartialRotaryDecoder(const ConfigReader& c, const std::string& type, Config& r) {
  const std::string found = c.string("model_type", type);
  if (found != type) c.fail("\"model_type\" \"" + found + "\" is not " + type);
  r.vocabSize = c.integer({"vocab_size"}, 1, 1 << 22, r.vocabSize);
  r.hiddenSize = c.integer({"hidden_size"}, 1, 1 << 16, r.hiddenSize);
  r.intermediateSize = c.integer({"intermediate_size"}, 1, 1 << 18, r.intermediateSize);
  r.numLayers = c.integer({"num_hidden_layers"}, 1, 1024, r.numLayers);
  r.numHeads = c.integer({"num_attention_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_attention_heads", r.numHeads, "hidden_size", r.hiddenSize);
  // null (PhiConfig's default) or absent: one key/value head per query head.
  r.numKvHeads = c.integer({"num_key_value_heads"}, 1, 1024, r.numHeads);
  c.requireDivides("num_key_value_heads", r.numKvHeads, "num_attention_heads", r.numHeads);
  r.maxPositions = c.integer({"max_position_embeddings"}, 1, 1 << 24, r.maxPositions);
  r.layerNormEps = c.number("layer_norm_eps", 1e-5);
  if (!(r.layerNormEps > 0) || r.layerNormEps > 1)
    c.fail("\"layer_norm_eps\" must be a positive number below 1, got " +
           formatNumber(r.layerNormEps));
  r.ropeTheta = c.number("rope_theta", 10000.0);
  if (!(r.ropeTheta > 1) || r.ropeTheta > kMaxRopeBase)
    c.fail("\"rope_theta\" must be above 1 and at most 1e30, got " + formatNumber(r.ropeTheta));
  r.ropeScaling = readRopeScaling(c);
  r.partialRotaryFactor = c.number("partial_rotary_factor", r.partialRotaryFactor);
  const double f = r.partialRotaryFactor;
  if (!(f > 0) || f > 1 || r.rotaryDim() < 2 || r.rotaryDim() % 2 != 0)
    c.fail("\"partial_rotary_factor\" (" + formatNumber(f) +
           ") must rotate an even number of dimensions from 2 to head_dim (" +
           std::to_string(r.headDim()) + ")");
  r.tieWordEmbeddings = c.flag("tie_word_embeddings", false);
}

template <typename Config>
std::string describePartialRotaryDecoder(const std::string& type, const Config& r) {
  return type + ": " + std::to_string(r.numLayers) + " layers, " + std::to_string(r.numHeads) +
         " heads (" + std::to_string(r.numKvHeads) + " kv), hidden_size " +
         std::to_string(r.hiddenSize) + ", intermediate_size " +
         std::to_string(r.intermediateSize) + ", vocab_size " + std::to_string(r.vocabSize);
}

}  // namespace

std::string PhiConfig::describe() const { return describePartialRotaryDecoder("phi", *this); }

PhiConfig PhiConfig::fromReader(const ConfigReader& c) {
  PhiConfig r;
  readPartialRotaryDecoder(c, "phi", r);
  r.hiddenAct = c.string("hidden_act", "gelu_new");
  if (r.hiddenAct.empty()) c.fail("\"hidden_act\" is empty");  // found by fuzz_decoder_configs
  r.qkLayernorm = c.flag("qk_layernorm", false);
  return r;
}

std::string StableLmConfig::describe() const {
  return describePartialRotaryDecoder("stablelm", *this);
}

StableLmConfig StableLmConfig::fromReader(const ConfigReader& c) {
  StableLmConfig r;
  readPartialRotaryDecoder(c, "stablelm", r);
  r.hiddenAct = c.string("hidden_act", "silu");
  if (r.hiddenAct.empty()) c.fail("\"hidden_act\" is empty");
  r.qkvBias = c.flag("use_qkv_bias", false);
  r.qkLayernorm = c.flag("qk_layernorm", false);
  r.parallelResidual = c.flag("use_parallel_residual", false);
  return r;
}

}  // namespace attnscope
