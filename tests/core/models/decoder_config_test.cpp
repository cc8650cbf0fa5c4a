// SPDX-License-Identifier: GPL-3.0-or-later
// The config.json parsers of the decoder families (Llama/Mistral/Qwen/Gemma, GPT-NeoX, Bloom,
// GPT-2):
// Hugging Face's defaults and key spellings, and errors that name the file and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/bloom_config.h"
#include "models/gpt2_config.h"
#include "models/gpt_neox_config.h"
#include "models/llama_config.h"

namespace attnscope {
namespace {

nlohmann::json llama() {
  return {{"model_type", "llama"},      {"vocab_size", 128256},
          {"hidden_size", 576},         {"intermediate_size", 1536},
          {"num_hidden_layers", 30},    {"num_attention_heads", 9},
          {"num_key_value_heads", 3},   {"max_position_embeddings", 8192},
          {"rms_norm_eps", 1e-5},       {"rope_theta", 100000.0},
          {"tie_word_embeddings", true}};
}

LlamaConfig parseLlama(const nlohmann::json& j) {
  return LlamaConfig::fromReader(ConfigReader(j, "dir/config.json"));
}

void expectLlamaError(const nlohmann::json& j, const std::string& word) {
  test::expectError([&] { parseLlama(j); }, ErrorKind::Format, word);
  test::expectError([&] { parseLlama(j); }, ErrorKind::Format, "dir/config.json");
}

TEST(LlamaConfig, ReadsASmolLmConfig) {
  const LlamaConfig c = parseLlama(llama());
  EXPECT_EQ(c.modelType, "llama");
  EXPECT_EQ(c.numLayers, 30);
  EXPECT_EQ(c.numHeads, 9);
  EXPECT_EQ(c.numKvHeads, 3);
  EXPECT_EQ(c.headDim, 64);  // hidden_size / num_attention_heads
  EXPECT_EQ(c.rotaryDim(), 64);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 100000.0);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.qkNorm);
  EXPECT_EQ(c.slidingWindow, 0);
  EXPECT_TRUE(c.ropeScaling.type.empty());
  EXPECT_EQ(c.hiddenAct, "silu");
}

TEST(LlamaConfig, DefaultsFollowTransformers) {
  nlohmann::json j = llama();
  j.erase("num_key_value_heads");
  j.erase("rope_theta");
  j.erase("tie_word_embeddings");
  const LlamaConfig c = parseLlama(j);
  EXPECT_EQ(c.numKvHeads, 9);  // no grouping
  EXPECT_DOUBLE_EQ(c.ropeTheta, 10000.0);
  EXPECT_FALSE(c.tieWordEmbeddings);
}

TEST(LlamaConfig, ModelTypesSetTheirFlags) {
  nlohmann::json j = llama();
  j["model_type"] = "qwen2";
  LlamaConfig c = parseLlama(j);
  EXPECT_TRUE(c.qkvBias);  // Qwen2's q/k/v always have biases, its o_proj never
  EXPECT_FALSE(c.outputBias);
  j["model_type"] = "qwen3";
  j["head_dim"] = 128;  // head_dim != hidden / heads
  c = parseLlama(j);
  EXPECT_TRUE(c.qkNorm);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_EQ(c.headDim, 128);
  j["attention_bias"] = true;
  c = parseLlama(j);
  EXPECT_TRUE(c.qkvBias);
  EXPECT_TRUE(c.outputBias);
  j = llama();
  j["mlp_bias"] = true;
  EXPECT_TRUE(parseLlama(j).mlpBias);
}

/// google/gemma-2b's config.json: multi-query, head_dim 256 given, the legacy "hidden_act": "gelu".
nlohmann::json gemma2b() {
  return {{"architectures", {"GemmaForCausalLM"}},
          {"model_type", "gemma"},
          {"vocab_size", 256000},
          {"hidden_size", 2048},
          {"intermediate_size", 16384},
          {"num_hidden_layers", 18},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 1},
          {"head_dim", 256},
          {"hidden_act", "gelu"},
          {"max_position_embeddings", 8192},
          {"rms_norm_eps", 1e-6},
          {"rope_scaling", nullptr},
          {"rope_theta", 10000.0},
          {"attention_bias", false}};
}

TEST(LlamaConfig, GemmaFlagsAndDefaultsFollowGemmaConfig) {
  LlamaConfig c = parseLlama(gemma2b());
  EXPECT_EQ(c.modelType, "gemma");
  EXPECT_TRUE(c.normUnitOffset);
  EXPECT_TRUE(c.scaleEmbeddings);
  EXPECT_TRUE(c.tieWordEmbeddings);  // GemmaConfig's default: lm_head is embed_tokens
  EXPECT_EQ(c.numKvHeads, 1);
  EXPECT_EQ(c.headDim, 256);
  EXPECT_EQ(c.rotaryDim(), 256);  // rotary over the whole head
  EXPECT_FALSE(c.qkvBias);
  EXPECT_FALSE(c.mlpBias);
  // Gemma 7B: head_dim defaults to 256, not hidden / heads (3072 / 16 = 192).
  nlohmann::json j = gemma2b();
  j["hidden_size"] = 3072;
  j["num_attention_heads"] = 16;
  j["num_key_value_heads"] = 16;
  j.erase("head_dim");
  j.erase("max_position_embeddings");
  c = parseLlama(j);
  EXPECT_EQ(c.headDim, 256);
  EXPECT_EQ(c.maxPositions, 8192);
  j["hidden_size"] = 3000;  // not a multiple of the heads: still fine with head_dim 256
  EXPECT_EQ(parseLlama(j).headDim, 256);
  // Llama itself keeps its flags off.
  c = parseLlama(llama());
  EXPECT_FALSE(c.normUnitOffset);
  EXPECT_FALSE(c.scaleEmbeddings);
}

TEST(LlamaConfig, GemmaUsesTheTanhGeluItWasTrainedWith) {
  nlohmann::json j = gemma2b();
  EXPECT_EQ(parseLlama(j).hiddenAct, "gelu_pytorch_tanh");  // Gemma 1.0's legacy "gelu"
  j.erase("hidden_act");
  EXPECT_EQ(parseLlama(j).hiddenAct, "gelu_pytorch_tanh");  // Gemma 1.1: neither key
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["hidden_act"] = "gelu";
  EXPECT_EQ(parseLlama(j).hiddenAct, "gelu_pytorch_tanh");
  j["hidden_activation"] = "gelu_new";  // hidden_activation wins when given
  EXPECT_EQ(parseLlama(j).hiddenAct, "gelu_new");
  j.erase("hidden_activation");
  j["hidden_act"] = "silu";  // any other hidden_act is taken as written
  EXPECT_EQ(parseLlama(j).hiddenAct, "silu");
  j["hidden_act"] = 3;
  expectLlamaError(j, "hidden_act");
  // Llama's "gelu" stays the exact GELU.
  j = llama();
  j["hidden_act"] = "gelu";
  EXPECT_EQ(parseLlama(j).hiddenAct, "gelu");
}

TEST(LlamaConfig, SlidingWindows) {
  nlohmann::json j = llama();
  j["model_type"] = "mistral";
  j["sliding_window"] = 4096;
  LlamaConfig c = parseLlama(j);
  EXPECT_EQ(c.slidingWindow, 4096);
  EXPECT_TRUE(c.windowed(0));
  j["sliding_window"] = nullptr;  // Mistral v0.2+: no window
  EXPECT_EQ(parseLlama(j).slidingWindow, 0);
  // Qwen: only with use_sliding_window, and only from max_window_layers on.
  j = llama();
  j["model_type"] = "qwen2";
  j["sliding_window"] = 32;
  j["max_window_layers"] = 20;
  EXPECT_EQ(parseLlama(j).slidingWindow, 0);
  j["use_sliding_window"] = true;
  c = parseLlama(j);
  EXPECT_EQ(c.slidingWindow, 32);
  EXPECT_FALSE(c.windowed(19));
  EXPECT_TRUE(c.windowed(20));
  j["max_window_layers"] = 30;  // every layer below it: no window anywhere
  EXPECT_EQ(parseLlama(j).slidingWindow, 0);
  // Llama itself has no window, whatever the file says.
  j = llama();
  j["sliding_window"] = 16;
  EXPECT_EQ(parseLlama(j).slidingWindow, 0);
}

TEST(LlamaConfig, RopeScalingInBothSpellings) {
  nlohmann::json j = llama();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  EXPECT_EQ(parseLlama(j).ropeScaling.type, "linear");
  EXPECT_DOUBLE_EQ(parseLlama(j).ropeScaling.factor, 4.0);
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_EQ(parseLlama(j).ropeScaling.type, "dynamic");
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 32.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  const RopeScalingConfig s = parseLlama(j).ropeScaling;
  EXPECT_EQ(s.type, "llama3");
  EXPECT_DOUBLE_EQ(s.factor, 32.0);
  EXPECT_DOUBLE_EQ(s.highFreqFactor, 4.0);
  EXPECT_EQ(s.originalMaxPositions, 8192);
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_TRUE(parseLlama(j).ropeScaling.type.empty());
  j["rope_scaling"] = nullptr;
  EXPECT_TRUE(parseLlama(j).ropeScaling.type.empty());
}

TEST(LlamaConfig, BadValuesNameTheField) {
  nlohmann::json j = llama();
  j["num_key_value_heads"] = 4;
  expectLlamaError(j, "num_key_value_heads (4) must divide num_attention_heads (9)");
  j = llama();
  j["hidden_size"] = 576.5;
  expectLlamaError(j, "\"hidden_size\" must be a whole number");
  j = llama();
  j.erase("vocab_size");
  expectLlamaError(j, "missing \"vocab_size\"");
  j = llama();
  j["hidden_size"] = 577;
  expectLlamaError(j, "num_attention_heads (9) must divide hidden_size (577)");
  j = llama();
  j["rms_norm_eps"] = -1;
  expectLlamaError(j, "rms_norm_eps");
  j = llama();
  j["rope_theta"] = "big";
  expectLlamaError(j, "\"rope_theta\" must be a number");
  j = llama();
  j["head_dim"] = 63;
  expectLlamaError(j, "head_dim");
  j = llama();
  j["tie_word_embeddings"] = "yes";
  expectLlamaError(j, "\"tie_word_embeddings\" must be true or false");
  j = llama();
  j["partial_rotary_factor"] = 0;
  expectLlamaError(j, "partial_rotary_factor");
  j = llama();
  j["rope_scaling"] = "linear";
  expectLlamaError(j, "\"rope_scaling\" must be an object");
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expectLlamaError(j, "rope_scaling: \"rope_type\" \"yarn\" is not supported");
  j["rope_scaling"] = {{"type", "linear"}};
  expectLlamaError(j, "rope_scaling: missing \"factor\"");
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 0.5}};
  expectLlamaError(j, "\"factor\" must be a number from 1");
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 4.0},
                       {"high_freq_factor", 1.0}};
  expectLlamaError(j, "high_freq_factor");
  j = llama();
  j["model_type"] = "mistral";
  j["sliding_window"] = 0;
  expectLlamaError(j, "\"sliding_window\" must be a whole number from 1");
}

nlohmann::json pythia() {
  return {{"model_type", "gpt_neox"},        {"vocab_size", 50304},    {"hidden_size", 512},
          {"intermediate_size", 2048},       {"num_hidden_layers", 6}, {"num_attention_heads", 8},
          {"max_position_embeddings", 2048}, {"rotary_pct", 0.25},     {"rotary_emb_base", 10000},
          {"use_parallel_residual", true},   {"layer_norm_eps", 1e-5}, {"hidden_act", "gelu"}};
}

TEST(GptNeoxConfig, ReadsAPythiaConfig) {
  const GptNeoxConfig c = GptNeoxConfig::fromReader(ConfigReader(pythia(), "p/config.json"));
  EXPECT_EQ(c.headDim(), 64);
  EXPECT_EQ(c.rotaryDim(), 16);  // int(64 * 0.25)
  EXPECT_TRUE(c.parallelResidual);
  EXPECT_FALSE(c.tieWordEmbeddings);
  nlohmann::json j = pythia();
  j.erase("rotary_pct");
  j.erase("rotary_emb_base");
  j["partial_rotary_factor"] = 0.5;  // the newer spellings
  j["rope_theta"] = 500.0;
  j["use_parallel_residual"] = false;
  const GptNeoxConfig d = GptNeoxConfig::fromReader(ConfigReader(j, "p/config.json"));
  EXPECT_EQ(d.rotaryDim(), 32);
  EXPECT_DOUBLE_EQ(d.rotaryBase, 500.0);
  EXPECT_FALSE(d.parallelResidual);
}

TEST(GptNeoxConfig, BadValuesNameTheField) {
  const auto expectBad = [](const nlohmann::json& j, const std::string& word) {
    test::expectError([&] { GptNeoxConfig::fromReader(ConfigReader(j, "p/config.json")); },
                      ErrorKind::Format, word);
  };
  nlohmann::json j = pythia();
  j["rotary_pct"] = 0.0;
  expectBad(j, "\"rotary_pct\" (0.000000) must rotate an even number");
  j["rotary_pct"] = 1.5;
  expectBad(j, "rotary_pct");
  j = pythia();
  j["num_attention_heads"] = 7;
  expectBad(j, "num_attention_heads (7) must divide hidden_size (512)");
  j = pythia();
  j["use_parallel_residual"] = 1;
  expectBad(j, "\"use_parallel_residual\" must be true or false");
  j = pythia();
  j["rotary_emb_base"] = 0;
  expectBad(j, "\"rotary_emb_base\" must be above 1");
  j = pythia();
  j["layer_norm_eps"] = 0;
  expectBad(j, "p/config.json: \"layer_norm_eps\"");
}

TEST(BloomConfig, ReadsEitherKeySpelling) {
  const nlohmann::json old = {
      {"vocab_size", 250880}, {"n_embed", 1024}, {"n_layer", 24}, {"num_attention_heads", 16}};
  const BloomConfig c = BloomConfig::fromReader(ConfigReader(old, "b/config.json"));
  EXPECT_EQ(c.hiddenSize, 1024);
  EXPECT_EQ(c.numLayers, 24);
  EXPECT_EQ(c.numHeads, 16);
  EXPECT_FALSE(c.residualPostLayernorm);
  const nlohmann::json bad = {
      {"vocab_size", 10}, {"hidden_size", 48}, {"n_layer", 2}, {"n_head", 5}};
  test::expectError([&] { BloomConfig::fromReader(ConfigReader(bad, "b/config.json")); },
                    ErrorKind::Format, "b/config.json: n_head (5) must divide hidden_size (48)");
  const nlohmann::json noLayers = {{"vocab_size", 10}, {"hidden_size", 48}, {"n_head", 6}};
  test::expectError([&] { BloomConfig::fromReader(ConfigReader(noLayers, "b/config.json")); },
                    ErrorKind::Format, "missing \"n_layer\"");
}

// The GPT-2 family reads config.json once, through its FolderFamily's reader: the same config and
// the same messages as reading the text.
TEST(Gpt2Config, ReaderAndTextAgree) {
  const nlohmann::json gpt2 = {{"model_type", "gpt2"}, {"n_layer", 12},
                               {"n_head", 12},         {"n_embd", 768},
                               {"n_ctx", 1024},        {"vocab_size", 50257},
                               {"n_inner", nullptr},   {"scale_attn_weights", true}};
  const Gpt2Config a = Gpt2Config::fromReader(ConfigReader(gpt2, "g/config.json"));
  const Gpt2Config b = Gpt2Config::fromJson(gpt2.dump(), "g/config.json");
  EXPECT_EQ(a.nLayer, 12);
  EXPECT_EQ(a.nPositions, 1024);  // n_ctx when n_positions is missing
  EXPECT_EQ(a.innerDim(), 3072);
  EXPECT_EQ(a.parameterCount(), b.parameterCount());
  EXPECT_EQ(a.activation, b.activation);
  const std::pair<nlohmann::json, std::string> bad[] = {
      {{{"n_embd", 65537}},
       "g/config.json: \"n_embd\" must be a positive whole number up to 65536"},
      {{{"n_head", 5}}, "g/config.json: n_head (5) must divide n_embd (768)"},
      {{{"model_type", "xlnet"}}, "only GPT-2 (\"gpt2\") folders can be opened"},
      {{{"scale_attn_weights", "yes"}}, "\"scale_attn_weights\" must be true or false"}};
  for (const auto& [change, word] : bad) {
    nlohmann::json j = gpt2;
    j.update(change);
    test::expectError([&] { Gpt2Config::fromReader(ConfigReader(j, "g/config.json")); },
                      ErrorKind::Format, word);
    test::expectError([&] { Gpt2Config::fromJson(j.dump(), "g/config.json"); }, ErrorKind::Format,
                      word);
  }
}

}  // namespace
}  // namespace attnscope
