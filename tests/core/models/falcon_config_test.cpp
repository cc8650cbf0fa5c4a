// SPDX-License-Identifier: GPL-3.0-or-later
// The config.json parser of Falcon (model_type falcon): transformers' FalconConfig defaults, the
// three query_key_value layouts and the norms each layout builds, and errors that name the file
// and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/falcon_config.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other config tests.
namespace falcon_config_test {

nlohmann::json falcon7b() {  // tiiuae/falcon-7b's config.json, less the dropouts and auto_map
  return {{"model_type", "falcon"},
          {"architectures", {"FalconForCausalLM"}},
          {"alibi", false},
          {"apply_residual_connection_post_layernorm", false},
          {"bias", false},
          {"bos_token_id", 11},
          {"eos_token_id", 11},
          {"hidden_size", 4544},
          {"layer_norm_epsilon", 1e-5},
          {"multi_query", true},
          {"new_decoder_architecture", false},
          {"num_attention_heads", 71},
          {"num_hidden_layers", 32},
          {"parallel_attn", true},
          {"vocab_size", 65024}};
}

nlohmann::json falcon40b() {  // tiiuae/falcon-40b's: the new decoder architecture, 8 kv groups
  nlohmann::json j = falcon7b();
  j["hidden_size"] = 8192;
  j["new_decoder_architecture"] = true;
  j["num_attention_heads"] = 128;
  j["num_hidden_layers"] = 60;
  j["num_kv_heads"] = 8;
  return j;
}

nlohmann::json falconRw1b() {  // tiiuae/falcon-rw-1b's: ALiBi, per-head q|k|v, sequential, biases
  return {{"model_type", "falcon"},
          {"alibi", true},
          {"bias", true},
          {"hidden_size", 2048},
          {"layer_norm_epsilon", 1e-5},
          {"multi_query", false},
          {"new_decoder_architecture", false},
          {"num_attention_heads", 32},
          {"num_hidden_layers", 24},
          {"parallel_attn", false},
          {"vocab_size", 50304}};
}

FalconConfig parse(const nlohmann::json& j) {
  return FalconConfig::fromReader(ConfigReader(j, "falcon/config.json"));
}

TEST(FalconConfig, ReadsFalcon7bMultiQuery) {
  const FalconConfig c = parse(falcon7b());
  EXPECT_EQ(c.layout(), FalconQkvLayout::MultiQuery);
  EXPECT_EQ(c.numHeads, 71);
  EXPECT_EQ(c.numKvHeads, 1);
  EXPECT_EQ(c.headDim(), 64);
  EXPECT_EQ(c.qkvWidth(), 4544 + 2 * 64);  // hidden + one key and one value head
  EXPECT_EQ(c.ffnHiddenSize, 4 * 4544);
  EXPECT_TRUE(c.parallelAttn);
  EXPECT_FALSE(c.twoNorms());  // one input_layernorm read by both sublayers
  EXPECT_FALSE(c.alibi);
  EXPECT_FALSE(c.bias);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.activation, "gelu");
  EXPECT_NE(c.describe().find("falcon: 32 layers, 71 heads (1 kv, multi-query"), std::string::npos);
}

TEST(FalconConfig, ReadsFalcon40bGrouped) {
  FalconConfig c = parse(falcon40b());
  EXPECT_EQ(c.layout(), FalconQkvLayout::Grouped);
  EXPECT_EQ(c.numKvHeads, 8);  // multi_query true is ignored by the new architecture
  EXPECT_EQ(c.qkvWidth(), (128 + 2 * 8) * 64);
  EXPECT_EQ(c.numLnInParallelAttn, 2);  // null: ln_attn and ln_mlp
  EXPECT_TRUE(c.twoNorms());
  // Falcon 2 (11B): one norm for both, its own MLP width and rotary base, an untied head.
  nlohmann::json j = falcon40b();
  j["num_ln_in_parallel_attn"] = 1;
  j["ffn_hidden_size"] = 16384;
  j["rope_theta"] = 500042.0;
  j["tie_word_embeddings"] = false;
  j["max_position_embeddings"] = 8192;
  c = parse(j);
  EXPECT_FALSE(c.twoNorms());
  EXPECT_EQ(c.ffnHiddenSize, 16384);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 500042.0);
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_EQ(c.maxPositions, 8192);
}

TEST(FalconConfig, ReadsFalconRwPerHeadAlibi) {
  const FalconConfig c = parse(falconRw1b());
  EXPECT_EQ(c.layout(), FalconQkvLayout::PerHead);
  EXPECT_EQ(c.numKvHeads, 32);
  EXPECT_EQ(c.qkvWidth(), 3 * 2048);
  EXPECT_TRUE(c.alibi);
  EXPECT_FALSE(c.parallelAttn);
  EXPECT_TRUE(c.bias);
  EXPECT_NE(c.describe().find("alibi, sequential"), std::string::npos);
}

TEST(FalconConfig, DefaultsFollowTransformers) {
  // FalconConfig(): Falcon-7B's sizes, multi-query, parallel, rotary with base 10000, no biases,
  // GELU, 2048 positions, tied head.
  FalconConfig c = parse({{"model_type", "falcon"}});
  EXPECT_EQ(c.vocabSize, 65024);
  EXPECT_EQ(c.hiddenSize, 4544);
  EXPECT_EQ(c.numLayers, 32);
  EXPECT_EQ(c.numHeads, 71);
  EXPECT_EQ(c.numKvHeads, 1);
  EXPECT_EQ(c.maxPositions, 2048);
  EXPECT_DOUBLE_EQ(c.ropeTheta, 10000.0);
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-5);
  EXPECT_TRUE(c.ropeScaling.type.empty());
  EXPECT_TRUE(c.multiQuery);
  EXPECT_TRUE(c.parallelAttn);
  EXPECT_FALSE(c.newDecoderArchitecture);
  EXPECT_TRUE(c.tieWordEmbeddings);
  // n_embed (which FalconConfig takes over hidden_size), the Falcon-RW code's n_head and n_layer;
  // num_kv_heads null in the new architecture: one per query head.
  c = parse({{"n_embed", 64},
             {"hidden_size", 4544},
             {"n_head", 4},
             {"n_layer", 2},
             {"new_decoder_architecture", true},
             {"num_kv_heads", nullptr},
             {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}});
  EXPECT_EQ(c.hiddenSize, 64);
  EXPECT_EQ(c.numHeads, 4);
  EXPECT_EQ(c.numLayers, 2);
  EXPECT_EQ(c.numKvHeads, 4);
  EXPECT_EQ(c.ffnHiddenSize, 256);
  EXPECT_EQ(c.ropeScaling.type, "linear");
  // The old layout ignores num_ln_in_parallel_attn unless it asks for two norms.
  nlohmann::json j = falcon7b();
  j["num_ln_in_parallel_attn"] = 1;
  EXPECT_FALSE(parse(j).twoNorms());
}

TEST(FalconConfig, BadValuesNameTheField) {
  const auto bad = [](nlohmann::json j, const char* key, const nlohmann::json& value,
                      const std::string& word) {
    j[key] = value;
    test::expectFormatErrorIn([&] { parse(j); }, "falcon/config.json", word);
  };
  bad(falcon7b(), "num_attention_heads", 70, "num_attention_heads (70)");
  bad(falcon7b(), "hidden_size", 64.5, "hidden_size");
  bad(falcon7b(), "layer_norm_epsilon", 0, "layer_norm_epsilon");
  bad(falcon7b(), "rope_theta", 1, "rope_theta");
  bad(falcon7b(), "activation", "", "activation");
  bad(falcon7b(), "alibi", "yes", "alibi");
  bad(falcon7b(), "ffn_hidden_size", 0, "ffn_hidden_size");
  bad(falcon7b(), "num_ln_in_parallel_attn", 2, "num_ln_in_parallel_attn");  // old layout
  bad(falcon7b(), "rope_scaling", {{"type", "yarn"}, {"factor", 2.0}}, "yarn");
  bad(falcon40b(), "num_kv_heads", 3, "num_kv_heads (3)");
  bad(falcon40b(), "num_ln_in_parallel_attn", 3, "num_ln_in_parallel_attn");
  bad(falcon40b(), "parallel_attn", false, "parallel_attn");
  bad(falconRw1b(), "num_kv_heads", 8, "num_kv_heads (8)");  // per head: one kv per query head
  // An odd head size cannot rotate; with ALiBi it needs not.
  nlohmann::json odd = falcon7b();
  odd["hidden_size"] = 71 * 3;
  test::expectFormatErrorIn([&] { parse(odd); }, "falcon/config.json", "must be even");
  odd["alibi"] = true;
  EXPECT_EQ(parse(odd).headDim(), 3);
}

}  // namespace falcon_config_test
}  // namespace attnscope
