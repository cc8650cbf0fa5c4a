// SPDX-License-Identifier: GPL-3.0-or-later
// Gemma2Config: the published Gemma 2 and Gemma 3 configs, the defaults of transformers'
// Gemma2Config and Gemma3TextConfig for what a config leaves out (Gemma 3 4B's text_config
// leaves out most), which layers slide, and errors that name the file and the field.
#include "models/gemma2_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other decoder tests.
namespace gemma2_config_test {

Gemma2Config parse(const nlohmann::json& j) {
  return Gemma2Config::fromReader(ConfigReader(j, "dir/config.json"));
}

void expectGemmaError(const nlohmann::json& j, const std::string& word) {
  test::expectError([&] { parse(j); }, ErrorKind::Format, word);
  test::expectError([&] { parse(j); }, ErrorKind::Format, "dir/config.json");
}

/// The local (sliding-window) layers, as indices.
std::vector<int> slidingLayers(const Gemma2Config& c) {
  std::vector<int> out;
  for (int i = 0; i < c.numLayers; ++i)
    if (c.windowed(i)) out.push_back(i);
  return out;
}

/// google/gemma-2-2b's config.json.
nlohmann::json gemma2_2b() {
  return nlohmann::json::parse(R"({
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid",
    "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 2304, "initializer_range": 0.02, "intermediate_size": 9216,
    "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 8,
    "num_hidden_layers": 26, "num_key_value_heads": 4, "pad_token_id": 0,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
    "sliding_window": 4096, "torch_dtype": "float32", "use_cache": true, "vocab_size": 256000})");
}

/// google/gemma-3-1b-it's config.json.
nlohmann::json gemma3_1b() {
  return nlohmann::json::parse(R"({
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
    "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
    "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
    "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
    "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000,
    "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
    "use_cache": true, "vocab_size": 262144})");
}

/// google/gemma-3-4b-it's config.json (the vision config shortened): the text model's fields
/// are mostly Gemma3TextConfig's defaults.
nlohmann::json gemma3_4b() {
  return nlohmann::json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
    "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
    "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16",
    "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}})");
}

TEST(Gemma2Config, ReadsGemma2AndItsDefaults) {
  const Gemma2Config c = parse(gemma2_2b());
  EXPECT_EQ(c.modelType, "gemma2");
  EXPECT_EQ(c.numLayers, 26);
  EXPECT_EQ(c.numKvHeads, 4);
  EXPECT_EQ(c.headDim, 256);
  EXPECT_DOUBLE_EQ(c.attnSoftcap, 50.0);
  EXPECT_DOUBLE_EQ(c.finalSoftcap, 30.0);
  EXPECT_DOUBLE_EQ(c.queryPreAttnScalar, 256);
  EXPECT_EQ(c.slidingWindow, 4096);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.hiddenAct, "gelu_pytorch_tanh");
  // transformers' Gemma2: layer i slides when i % 2 == 0 (layer_types "sliding_attention" for
  // (i + 1) % 2), so the first layer is local and the last of 26 global.
  const std::vector<int> sliding = slidingLayers(c);
  ASSERT_EQ(sliding.size(), 13u);
  for (std::size_t i = 0; i < sliding.size(); ++i) EXPECT_EQ(sliding[i], int(2 * i));
  // One rotary for every layer.
  EXPECT_DOUBLE_EQ(c.ropeLocalTheta, c.ropeTheta);
  // Gemma 2 27B: the scores are scaled by 144^-0.5, not by head_dim (128)^-0.5.
  nlohmann::json big = gemma2_2b();
  big["head_dim"] = 128;
  big["query_pre_attn_scalar"] = 144;
  EXPECT_DOUBLE_EQ(parse(big).queryPreAttnScalar, 144);
  // Everything left out: Gemma2Config's defaults (softcaps 50 and 30, window 4096).
  const Gemma2Config d = parse({{"model_type", "gemma2"}});
  EXPECT_EQ(d.vocabSize, 256000);
  EXPECT_EQ(d.hiddenSize, 2304);
  EXPECT_EQ(d.numHeads, 8);
  EXPECT_EQ(d.maxPositions, 8192);
  EXPECT_DOUBLE_EQ(d.attnSoftcap, 50.0);
  EXPECT_DOUBLE_EQ(d.finalSoftcap, 30.0);
  EXPECT_EQ(d.slidingWindow, 4096);
  // null turns a cap off.
  nlohmann::json off = gemma2_2b();
  off["attn_logit_softcapping"] = nullptr;
  off["final_logit_softcapping"] = nullptr;
  EXPECT_EQ(parse(off).attnSoftcap, 0);
  EXPECT_EQ(parse(off).finalSoftcap, 0);
}

TEST(Gemma2Config, ReadsGemma3TextAndItsLocalGlobalPattern) {
  const Gemma2Config c = parse(gemma3_1b());
  EXPECT_EQ(c.modelType, "gemma3_text");
  EXPECT_TRUE(c.qkNorm);
  EXPECT_EQ(c.attnSoftcap, 0);  // null
  EXPECT_EQ(c.finalSoftcap, 0);
  EXPECT_EQ(c.slidingWindow, 512);
  EXPECT_EQ(c.numKvHeads, 1);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 1e6);
  EXPECT_DOUBLE_EQ(c.ropeLocalTheta, 10000);
  EXPECT_TRUE(c.ropeScaling.type.empty());
  EXPECT_EQ(c.maxPositions, 32768);
  // Five local layers to one global: layers 5, 11, 17 and 23 are global.
  for (int i = 0; i < c.numLayers; ++i) EXPECT_EQ(c.windowed(i), (i + 1) % 6 != 0) << i;
  // Left out: Gemma3TextConfig's defaults (no caps, rope_theta 1e6, pattern 6).
  const Gemma2Config d = parse({{"model_type", "gemma3_text"}, {"num_hidden_layers", 7}});
  EXPECT_EQ(d.attnSoftcap, 0);
  EXPECT_EQ(d.finalSoftcap, 0);
  EXPECT_EQ(d.vocabSize, 262208);
  EXPECT_EQ(d.maxPositions, 131072);
  EXPECT_DOUBLE_EQ(d.ropeTheta, 1e6);
  EXPECT_EQ(slidingLayers(d), (std::vector<int>{0, 1, 2, 3, 4, 6}));
  // A cap that a Gemma 3 config sets is honoured.
  nlohmann::json capped = gemma3_1b();
  capped["attn_logit_softcapping"] = 20.0;
  EXPECT_DOUBLE_EQ(parse(capped).attnSoftcap, 20.0);
}

TEST(Gemma2Config, ReadsTheTextConfigOfAGemma3Folder) {
  const Gemma2Config c = parse(gemma3_4b());
  EXPECT_EQ(c.modelType, "gemma3");
  EXPECT_EQ(c.hiddenSize, 2560);
  EXPECT_EQ(c.numLayers, 34);
  EXPECT_EQ(c.numHeads, 8);  // Gemma3TextConfig's defaults
  EXPECT_EQ(c.numKvHeads, 4);
  EXPECT_EQ(c.headDim, 256);
  EXPECT_EQ(c.vocabSize, 262208);
  EXPECT_TRUE(c.qkNorm);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.slidingWindow, 1024);
  // Linear scaling on the global layers only; the local ones rotate with their own base.
  EXPECT_EQ(c.ropeScaling.type, "linear");
  EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 8.0);
  EXPECT_TRUE(c.ropeLocalScaling.type.empty());
  EXPECT_DOUBLE_EQ(c.ropeLocalTheta, 10000);
}

TEST(Gemma2Config, LayerTypesAndRopeParametersOverrideThePattern) {
  nlohmann::json j = gemma3_1b();
  j["num_hidden_layers"] = 3;
  j["layer_types"] = {"full_attention", "sliding_attention", "full_attention"};
  EXPECT_EQ(slidingLayers(parse(j)), (std::vector<int>{1}));
  // transformers 5's rope_parameters, per layer type.
  j["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 5e5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 100.0}}}};
  const Gemma2Config c = parse(j);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 5e5);
  EXPECT_EQ(c.ropeScaling.type, "linear");
  EXPECT_DOUBLE_EQ(c.ropeLocalTheta, 100.0);
  EXPECT_TRUE(c.ropeLocalScaling.type.empty());
  // A null window: no layer is windowed.
  j["sliding_window"] = nullptr;
  EXPECT_TRUE(slidingLayers(parse(j)).empty());
}

TEST(Gemma2Config, BadValuesNameTheField) {
  nlohmann::json j = gemma2_2b();
  j["layer_types"] = {"sliding_attention", "full_attention"};
  expectGemmaError(j, "layer_types");
  j["num_hidden_layers"] = 2;
  j["layer_types"] = {"sliding_attention", "local"};
  expectGemmaError(j, "\"layer_types\"[1]");
  j = gemma2_2b();
  j["attn_logit_softcapping"] = -1.0;
  expectGemmaError(j, "attn_logit_softcapping");
  j = gemma2_2b();
  j["final_logit_softcapping"] = "thirty";
  expectGemmaError(j, "final_logit_softcapping");
  j = gemma2_2b();
  j["query_pre_attn_scalar"] = 0;
  expectGemmaError(j, "query_pre_attn_scalar");
  j = gemma2_2b();
  j["num_key_value_heads"] = 3;
  expectGemmaError(j, "num_key_value_heads (3)");
  j = gemma3_1b();
  j["use_bidirectional_attention"] = true;
  expectGemmaError(j, "use_bidirectional_attention");
  j = gemma3_1b();
  j["sliding_window_pattern"] = 0;
  expectGemmaError(j, "sliding_window_pattern");
  j = gemma3_4b();
  j.erase("text_config");
  expectGemmaError(j, "text_config");
  j = gemma3_4b();
  j["text_config"]["head_dim"] = 255;
  expectGemmaError(j, "text_config");  // the message names the section
}

}  // namespace gemma2_config_test
}  // namespace attnscope
