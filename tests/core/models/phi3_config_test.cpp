// SPDX-License-Identifier: GPL-3.0-or-later
// Phi3Config: the published Phi-3 / Phi-4-mini configs, the defaults of transformers' Phi3Config,
// LongRoPE's factors and attention factor, and errors that name the file and the field; OLMo 2's
// LlamaConfig defaults; MixtralConfig's Qwen2-MoE flavour (Qwen2MoeConfig's defaults, the shared
// expert, dense layers).
#include "models/phi3_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/llama_config.h"
#include "models/mixtral_config.h"

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

/// Qwen/Qwen1.5-MoE-A2.7B's config.json (the fields attnscope reads).
nlohmann::json qwen15MoeA27b() {
  return nlohmann::json::parse(R"({
    "architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1, "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 32768,
    "max_window_layers": 21, "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
    "norm_topk_prob": false, "num_attention_heads": 16, "num_experts": 60,
    "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "shared_expert_intermediate_size": 5632,
    "sliding_window": 32768, "tie_word_embeddings": false, "use_sliding_window": false,
    "vocab_size": 151936})");
}

MixtralConfig parseMoe(const nlohmann::json& j) {
  return MixtralConfig::fromReader(ConfigReader(j, "dir/config.json"));
}

TEST(MixtralConfig, ReadsQwen15MoeA27b) {
  const MixtralConfig c = parseMoe(qwen15MoeA27b());
  EXPECT_EQ(c.base.modelType, "qwen2_moe");
  EXPECT_EQ(c.numExperts, 60);
  EXPECT_EQ(c.topK, 4);
  EXPECT_FALSE(c.normTopK);
  EXPECT_EQ(c.expertIntermediate, 1408);
  EXPECT_EQ(c.sharedExpertIntermediate, 5632);
  EXPECT_EQ(c.base.intermediateSize, 5632);  // the dense layers' width
  EXPECT_TRUE(c.base.qkvBias);
  EXPECT_FALSE(c.base.outputBias);
  EXPECT_FALSE(c.base.qkNorm);
  EXPECT_EQ(c.base.slidingWindow, 0);
  EXPECT_EQ(c.base.headDim, 128);
  EXPECT_DOUBLE_EQ(c.base.ropeTheta, 1e6);
  EXPECT_EQ(c.sparseLayers, std::vector<bool>(24, true));
  EXPECT_NE(c.describe().find("shared expert of width 5632"), std::string::npos);
}

TEST(MixtralConfig, Qwen2MoeDefaultsFollowQwen2MoeConfig) {
  const nlohmann::json j = {{"model_type", "qwen2_moe"}, {"vocab_size", 1000},
                            {"hidden_size", 64},         {"intermediate_size", 128},
                            {"num_hidden_layers", 4},    {"num_attention_heads", 4}};
  const MixtralConfig c = parseMoe(j);
  EXPECT_EQ(c.numExperts, 60);
  EXPECT_EQ(c.topK, 4);
  EXPECT_FALSE(c.normTopK);
  EXPECT_EQ(c.expertIntermediate, 1408);
  EXPECT_EQ(c.sharedExpertIntermediate, 5632);
  EXPECT_EQ(c.base.maxPositions, 32768);
  EXPECT_DOUBLE_EQ(c.base.rmsNormEps, 1e-6);
  EXPECT_DOUBLE_EQ(c.base.ropeTheta, 10000.0);
  EXPECT_TRUE(c.base.qkvBias);
  EXPECT_FALSE(c.base.tieWordEmbeddings);
  // The other mixtures of experts have no shared expert.
  nlohmann::json q3 = j;
  q3["model_type"] = "qwen3_moe";
  EXPECT_EQ(parseMoe(q3).sharedExpertIntermediate, 0);
  EXPECT_EQ(parseMoe(q3).numExperts, 128);
}

TEST(MixtralConfig, Qwen2MoeDenseLayersAndSwitches) {
  nlohmann::json j = qwen15MoeA27b();
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;  // (i + 1) % 2 == 0: layers 1, 3, 5
  j["mlp_only_layers"] = {3};
  EXPECT_EQ(parseMoe(j).sparseLayers, (std::vector<bool>{false, true, false, false, false, true}));
  j["qkv_bias"] = false;
  j["norm_topk_prob"] = true;
  const MixtralConfig c = parseMoe(j);
  EXPECT_FALSE(c.base.qkvBias);
  EXPECT_TRUE(c.normTopK);
  j["attention_bias"] = true;  // not a Qwen2MoeConfig key: o_proj never has a bias
  EXPECT_FALSE(parseMoe(j).base.outputBias);
}

TEST(MixtralConfig, Qwen2MoeBadValuesNameTheField) {
  const auto expectMoeError = [](const nlohmann::json& j, const std::string& word) {
    test::expectError([&] { parseMoe(j); }, ErrorKind::Format, word);
    test::expectError([&] { parseMoe(j); }, ErrorKind::Format, "dir/config.json");
  };
  nlohmann::json j = qwen15MoeA27b();
  j["num_experts_per_tok"] = 61;
  expectMoeError(j, "\"num_experts_per_tok\" (61) must be at most \"num_experts\" (60)");
  j = qwen15MoeA27b();
  j["shared_expert_intermediate_size"] = 0;
  expectMoeError(j, "shared_expert_intermediate_size");
  j = qwen15MoeA27b();
  j["moe_intermediate_size"] = 14.5;
  expectMoeError(j, "moe_intermediate_size");
  j = qwen15MoeA27b();
  j["use_sliding_window"] = true;
  expectMoeError(j, "use_sliding_window");
  j = qwen15MoeA27b();
  j["mlp_only_layers"] = {24};
  expectMoeError(j, "mlp_only_layers");
  j = qwen15MoeA27b();
  j["decoder_sparse_step"] = 0;
  expectMoeError(j, "decoder_sparse_step");
  j = qwen15MoeA27b();
  j["qkv_bias"] = "yes";
  expectMoeError(j, "qkv_bias");
  j = qwen15MoeA27b();
  j["model_type"] = "qwen2";
  expectMoeError(j, "qwen2_moe");
}

}  // namespace phi3_config_test
}  // namespace attnscope
