// SPDX-License-Identifier: GPL-3.0-or-later
// Phi3Config: the published Phi-3 / Phi-4-mini configs, the defaults of transformers' Phi3Config,
// LongRoPE's factors and attention factor, and errors that name the file and the field; OLMo 2's
// LlamaConfig defaults.
#include "models/phi3_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/llama_config.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other decoder tests.
namespace phi3_config_test {

Phi3Config parse(const nlohmann::json& j) {
  return Phi3Config::fromReader(ConfigReader(j, "dir/config.json"));
}

void expectPhi3Error(const nlohmann::json& j, const std::string& word) {
  test::expectError([&] { parse(j); }, ErrorKind::Format, word);
  test::expectError([&] { parse(j); }, ErrorKind::Format, "dir/config.json");
}

/// microsoft/Phi-3-mini-4k-instruct's config.json (the fields attnscope reads).
nlohmann::json phi3Mini4k() {
  return nlohmann::json::parse(R"({
    "architectures": ["Phi3ForCausalLM"], "bos_token_id": 1, "eos_token_id": 32000,
    "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 8192,
    "max_position_embeddings": 4096, "model_type": "phi3", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "pad_token_id": 32000, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0,
    "sliding_window": 2047, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "vocab_size": 32064})");
}

/// microsoft/Phi-3-mini-128k-instruct's shape: LongRoPE from 4096 to 131072 positions.
nlohmann::json phi3Mini128k() {
  nlohmann::json j = phi3Mini4k();
  j["max_position_embeddings"] = 131072;
  j["sliding_window"] = 262144;
  j["rope_scaling"] = {{"type", "longrope"},
                       {"short_factor", std::vector<double>(48, 1.05)},
                       {"long_factor", std::vector<double>(48, 1.7)}};
  return j;
}

/// microsoft/Phi-4-mini-instruct's shape: 24 heads of 128 (8 kv), 3/4 of each rotating, tied.
nlohmann::json phi4Mini() {
  return nlohmann::json{{"model_type", "phi3"},
                        {"hidden_size", 3072},
                        {"intermediate_size", 8192},
                        {"num_attention_heads", 24},
                        {"num_key_value_heads", 8},
                        {"num_hidden_layers", 32},
                        {"max_position_embeddings", 131072},
                        {"original_max_position_embeddings", 4096},
                        {"partial_rotary_factor", 0.75},
                        {"rope_theta", 10000.0},
                        {"rope_scaling",
                         {{"type", "longrope"},
                          {"short_factor", std::vector<double>(48, 1.0)},
                          {"long_factor", std::vector<double>(48, 2.0)}}},
                        {"sliding_window", 262144},
                        {"tie_word_embeddings", true},
                        {"vocab_size", 200064}};
}

TEST(Phi3Config, ReadsPhi3Mini4k) {
  const Phi3Config c = parse(phi3Mini4k());
  EXPECT_EQ(c.numLayers, 32);
  EXPECT_EQ(c.numHeads, 32);
  EXPECT_EQ(c.numKvHeads, 32);
  EXPECT_EQ(c.headDim, 96);
  EXPECT_EQ(c.rotaryDim, 96);
  EXPECT_EQ(c.slidingWindow, 2047);
  EXPECT_FALSE(c.longRope.enabled);
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(c.rmsNormEps, 1e-5);
}

TEST(Phi3Config, LongRopeAttentionFactorFromTheContextStretch) {
  const Phi3Config c = parse(phi3Mini128k());
  ASSERT_TRUE(c.longRope.enabled);
  EXPECT_EQ(c.longRope.shortFactor.size(), 48u);
  EXPECT_DOUBLE_EQ(c.longRope.longFactor[0], 1.7);
  EXPECT_EQ(c.originalMaxPositions, 4096);
  // sqrt(1 + ln(131072 / 4096) / ln(4096)) = sqrt(1 + 5 ln 2 / 12 ln 2)
  EXPECT_NEAR(c.longRope.attentionFactor, std::sqrt(1.0 + 5.0 / 12.0), 1e-12);
  // "su", LongRoPE's first name, and an explicit attention_factor.
  nlohmann::json j = phi3Mini128k();
  j["rope_scaling"]["type"] = "su";
  j["rope_scaling"]["attention_factor"] = 1.5;
  EXPECT_DOUBLE_EQ(parse(j).longRope.attentionFactor, 1.5);
  // No stretch: no attention factor.
  j = phi3Mini128k();
  j["max_position_embeddings"] = 4096;
  EXPECT_DOUBLE_EQ(parse(j).longRope.attentionFactor, 1.0);
}

TEST(Phi3Config, ReadsPhi4MiniPartialRotary) {
  const Phi3Config c = parse(phi4Mini());
  EXPECT_EQ(c.headDim, 128);
  EXPECT_EQ(c.rotaryDim, 96);
  EXPECT_EQ(c.numKvHeads, 8);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.longRope.longFactor.size(), 48u);
}

TEST(Phi3Config, DefaultsAreTransformers) {
  const Phi3Config c = parse(nlohmann::json{{"model_type", "phi3"}});
  EXPECT_EQ(c.vocabSize, 32064);
  EXPECT_EQ(c.hiddenSize, 3072);
  EXPECT_EQ(c.numKvHeads, 32);
  EXPECT_EQ(c.maxPositions, 4096);
  EXPECT_EQ(c.originalMaxPositions, 4096);
  EXPECT_EQ(c.slidingWindow, 0);
  EXPECT_EQ(c.hiddenAct, "silu");
}

TEST(Phi3Config, BadValuesNameTheField) {
  nlohmann::json j = phi3Mini128k();
  j["rope_scaling"]["short_factor"] = std::vector<double>(47, 1.0);
  expectPhi3Error(j, "short_factor");
  j = phi3Mini128k();
  j["rope_scaling"]["long_factor"] = {1, "x"};
  expectPhi3Error(j, "long_factor");
  j = phi3Mini128k();
  j["rope_scaling"].erase("long_factor");
  expectPhi3Error(j, "long_factor");
  j = phi3Mini128k();
  j["rope_scaling"]["type"] = "dynamic";
  expectPhi3Error(j, "dynamic");
  j = phi4Mini();
  j["partial_rotary_factor"] = 0.01;  // one rotary dimension
  expectPhi3Error(j, "partial_rotary_factor");
  j = phi3Mini4k();
  j["num_key_value_heads"] = 5;
  expectPhi3Error(j, "num_key_value_heads (5)");
  j = phi3Mini4k();
  j["model_type"] = "phi";
  expectPhi3Error(j, "model_type");
  j = phi3Mini128k();
  j["original_max_position_embeddings"] = 1;
  expectPhi3Error(j, "original_max_position_embeddings");
}

TEST(Olmo2Config, RmsNormEpsDefaultIsOlmo2s) {
  // Olmo2Config's rms_norm_eps is 1e-5 where LlamaConfig's is 1e-6.
  const nlohmann::json j = {{"model_type", "olmo2"},   {"vocab_size", 100352},
                            {"hidden_size", 2048},     {"intermediate_size", 8192},
                            {"num_hidden_layers", 16}, {"num_attention_heads", 16}};
  EXPECT_DOUBLE_EQ(LlamaConfig::fromReader(ConfigReader(j, "config.json")).rmsNormEps, 1e-5);
  nlohmann::json llama = j;
  llama["model_type"] = "llama";
  EXPECT_DOUBLE_EQ(LlamaConfig::fromReader(ConfigReader(llama, "config.json")).rmsNormEps, 1e-6);
}

}  // namespace phi3_config_test
}  // namespace attnscope
