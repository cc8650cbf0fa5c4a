// SPDX-License-Identifier: GPL-3.0-or-later
// The config.json parsers of Phi-1/1.5/2 (model_type phi), StableLM (model_type stablelm) and
// OLMo 1 (model_type olmo): transformers' defaults, the real checkpoints' keys, and errors that
// name the file and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/olmo_config.h"
#include "models/phi_config.h"

namespace attnscope {
namespace {

nlohmann::json phi2() {  // microsoft/phi-2's config.json, less the dropouts
  return {{"model_type", "phi"},
          {"architectures", {"PhiForCausalLM"}},
          {"vocab_size", 51200},
          {"hidden_size", 2560},
          {"intermediate_size", 10240},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 32},
          {"max_position_embeddings", 2048},
          {"layer_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"rope_scaling", nullptr},
          {"partial_rotary_factor", 0.4},
          {"qk_layernorm", false},
          {"hidden_act", "gelu_new"},
          {"tie_word_embeddings", false}};
}

nlohmann::json stablelm2() {  // stabilityai/stablelm-2-1_6b's config.json
  return {{"model_type", "stablelm"},      {"vocab_size", 100352},
          {"hidden_size", 2048},           {"intermediate_size", 5632},
          {"num_hidden_layers", 24},       {"num_attention_heads", 32},
          {"num_key_value_heads", 32},     {"max_position_embeddings", 4096},
          {"layer_norm_eps", 1e-5},        {"rope_theta", 10000},
          {"partial_rotary_factor", 0.25}, {"use_qkv_bias", true},
          {"hidden_act", "silu"},          {"tie_word_embeddings", false}};
}

PhiConfig parsePhi(const nlohmann::json& j) {
  return PhiConfig::fromReader(ConfigReader(j, "phi/config.json"));
}
StableLmConfig parseStableLm(const nlohmann::json& j) {
  return StableLmConfig::fromReader(ConfigReader(j, "slm/config.json"));
}

TEST(PhiConfig, ReadsPhi2) {
  const PhiConfig c = parsePhi(phi2());
  EXPECT_EQ(c.headDim(), 80);
  EXPECT_EQ(c.rotaryDim(), 32);  // int(80 * 0.4)
  EXPECT_EQ(c.numKvHeads, 32);
  EXPECT_EQ(c.hiddenAct, "gelu_new");
  EXPECT_FALSE(c.qkLayernorm);
  EXPECT_TRUE(c.ropeScaling.type.empty());
  EXPECT_NE(c.describe().find("phi: 32 layers, 32 heads"), std::string::npos);
}

TEST(PhiConfig, DefaultsFollowTransformers) {
  // PhiConfig(): partial_rotary_factor 0.5, gelu_new, no q/k LayerNorm, untied;
  // num_key_value_heads null: one per query head.
  const PhiConfig c = parsePhi({{"model_type", "phi"},
                                {"hidden_size", 64},
                                {"num_attention_heads", 4},
                                {"num_key_value_heads", nullptr}});
  EXPECT_EQ(c.vocabSize, 51200);
  EXPECT_EQ(c.numLayers, 24);
  EXPECT_EQ(c.intermediateSize, 8192);
  EXPECT_EQ(c.maxPositions, 2048);
  EXPECT_EQ(c.numKvHeads, 4);
  EXPECT_DOUBLE_EQ(c.partialRotaryFactor, 0.5);
  EXPECT_EQ(c.rotaryDim(), 8);
  EXPECT_EQ(c.hiddenAct, "gelu_new");
  EXPECT_FALSE(c.qkLayernorm);
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-5);
  nlohmann::json j = phi2();
  j["qk_layernorm"] = true;
  j["num_key_value_heads"] = 8;
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  const PhiConfig d = parsePhi(j);
  EXPECT_TRUE(d.qkLayernorm);
  EXPECT_EQ(d.numKvHeads, 8);
  EXPECT_EQ(d.ropeScaling.type, "linear");
}

TEST(PhiConfig, BadValuesNameTheField) {
  const std::pair<nlohmann::json, std::string> bad[] = {
      {{{"partial_rotary_factor", 0.0}}, "\"partial_rotary_factor\" (0) must rotate an even"},
      {{{"partial_rotary_factor", 1.5}}, "partial_rotary_factor"},
      // int(80 * 0.01) = 0 dims; int(80 * 0.3125) = 25, odd.
      {{{"partial_rotary_factor", 0.01}}, "from 2 to head_dim (80)"},
      {{{"partial_rotary_factor", 0.3125}}, "even number of dimensions"},
      {{{"num_attention_heads", 7}}, "num_attention_heads (7) must divide hidden_size (2560)"},
      {{{"num_key_value_heads", 5}}, "num_key_value_heads (5) must divide num_attention_heads"},
      {{{"qk_layernorm", 1}}, "\"qk_layernorm\" must be true or false"},
      {{{"layer_norm_eps", 0}}, "\"layer_norm_eps\" must be a positive number"},
      {{{"rope_theta", 1}}, "\"rope_theta\" must be above 1"},
      {{{"vocab_size", 0}}, "\"vocab_size\" must be a whole number"},
      {{{"model_type", "phi3"}}, "\"model_type\" \"phi3\" is not phi"},
      {{{"hidden_act", ""}}, "\"hidden_act\" is empty"},
      {{{"rope_scaling", {{"type", "yarn"}, {"factor", 2.0}}}}, "yarn"}};
  for (const auto& [change, word] : bad) {
    nlohmann::json j = phi2();
    j.update(change);
    test::expectError([&] { parsePhi(j); }, ErrorKind::Format, word);
    test::expectError([&] { parsePhi(j); }, ErrorKind::Format, "phi/config.json");
  }
}

TEST(StableLmConfig, ReadsStableLm2) {
  const StableLmConfig c = parseStableLm(stablelm2());
  EXPECT_EQ(c.headDim(), 64);
  EXPECT_EQ(c.rotaryDim(), 16);  // int(0.25 * 64)
  EXPECT_TRUE(c.qkvBias);
  EXPECT_FALSE(c.qkLayernorm);
  EXPECT_FALSE(c.parallelResidual);
  nlohmann::json j = stablelm2();  // StableLM 2 12B's options
  j["qk_layernorm"] = true;
  j["use_parallel_residual"] = true;
  j["num_key_value_heads"] = 8;
  const StableLmConfig d = parseStableLm(j);
  EXPECT_TRUE(d.qkLayernorm);
  EXPECT_TRUE(d.parallelResidual);
  EXPECT_EQ(d.numKvHeads, 8);
}

TEST(StableLmConfig, DefaultsFollowTransformers) {
  // StableLmConfig(): 32 layers of 2560, 32 heads and 32 kv heads, a quarter rotary, silu,
  // no biases, no q/k LayerNorm, sequential residual, 4096 positions.
  const StableLmConfig c = parseStableLm({{"model_type", "stablelm"}});
  EXPECT_EQ(c.vocabSize, 50304);
  EXPECT_EQ(c.hiddenSize, 2560);
  EXPECT_EQ(c.intermediateSize, 6912);
  EXPECT_EQ(c.numLayers, 32);
  EXPECT_EQ(c.numHeads, 32);
  EXPECT_EQ(c.numKvHeads, 32);
  EXPECT_EQ(c.maxPositions, 4096);
  EXPECT_EQ(c.rotaryDim(), 20);  // int(0.25 * 80)
  EXPECT_EQ(c.hiddenAct, "silu");
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.qkLayernorm);
  EXPECT_FALSE(c.parallelResidual);
  EXPECT_FALSE(c.tieWordEmbeddings);
}

TEST(StableLmConfig, BadValuesNameTheField) {
  const std::pair<nlohmann::json, std::string> bad[] = {
      {{{"use_qkv_bias", "yes"}}, "\"use_qkv_bias\" must be true or false"},
      {{{"use_parallel_residual", 0}}, "\"use_parallel_residual\" must be true or false"},
      {{{"partial_rotary_factor", 0.01}}, "from 2 to head_dim (64)"},
      {{{"num_key_value_heads", 3}}, "num_key_value_heads (3) must divide"},
      {{{"num_hidden_layers", 0}}, "\"num_hidden_layers\" must be a whole number"},
      {{{"model_type", "stablelm_epoch"}}, "is not stablelm"},
      {{{"hidden_act", ""}}, "\"hidden_act\" is empty"}};
  for (const auto& [change, word] : bad) {
    nlohmann::json j = stablelm2();
    j.update(change);
    test::expectError([&] { parseStableLm(j); }, ErrorKind::Format, word);
    test::expectError([&] { parseStableLm(j); }, ErrorKind::Format, "slm/config.json");
  }
}

TEST(OlmoConfig, ReadsOlmo17WithItsClip) {
  // allenai/OLMo-1.7-7B-hf's config.json, less the token ids.
  nlohmann::json j = {{"model_type", "olmo"},      {"vocab_size", 50304},
                      {"hidden_size", 4096},       {"intermediate_size", 11008},
                      {"num_hidden_layers", 32},   {"num_attention_heads", 32},
                      {"num_key_value_heads", 32}, {"max_position_embeddings", 4096},
                      {"rope_theta", 10000.0},     {"rope_scaling", nullptr},
                      {"attention_bias", false},   {"clip_qkv", 8.0},
                      {"hidden_act", "silu"},      {"tie_word_embeddings", false}};
  const OlmoConfig c = OlmoConfig::fromReader(ConfigReader(j, "olmo/config.json"));
  EXPECT_DOUBLE_EQ(c.clipQkv, 8.0);
  EXPECT_EQ(c.base.headDim, 128);
  EXPECT_EQ(c.base.maxPositions, 4096);
  EXPECT_FALSE(c.base.qkvBias);
  EXPECT_NE(c.describe().find("clip_qkv 8"), std::string::npos);
  j["clip_qkv"] = nullptr;  // OLMo-1B-hf: no clipping
  j["mlp_bias"] = true;     // not an OlmoConfig field: OlmoMLP has no biases
  const OlmoConfig d = OlmoConfig::fromReader(ConfigReader(j, "olmo/config.json"));
  EXPECT_EQ(d.clipQkv, 0.0);
  EXPECT_FALSE(d.base.mlpBias);
  EXPECT_EQ(d.describe().find("clip"), std::string::npos);
  const std::pair<nlohmann::json, std::string> bad[] = {
      {{{"clip_qkv", 0}}, "\"clip_qkv\" must be a positive number or null"},
      {{{"clip_qkv", -8.0}}, "\"clip_qkv\" must be a positive number or null"},
      {{{"clip_qkv", "8"}}, "\"clip_qkv\" must be a number"},
      {{{"model_type", "olmo2"}}, "\"model_type\" \"olmo2\" is not olmo"},
      {{{"num_key_value_heads", 5}}, "num_key_value_heads (5) must divide"}};
  for (const auto& [change, word] : bad) {
    nlohmann::json k = j;
    k.update(change);
    test::expectError([&] { OlmoConfig::fromReader(ConfigReader(k, "olmo/config.json")); },
                      ErrorKind::Format, word);
  }
}

}  // namespace
}  // namespace attnscope
