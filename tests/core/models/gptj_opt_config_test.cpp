// SPDX-License-Identifier: GPL-3.0-or-later
// The config.json parsers of GPT-J (model_type gptj), OPT (model_type opt) and GPT-Neo (model_type
// gpt_neo): transformers' defaults, the real checkpoints' keys, and errors that name the file and
// the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/gpt_neo_config.h"
#include "models/gptj_config.h"
#include "models/opt_config.h"

namespace attnscope {
namespace {

nlohmann::json gptj6b() {  // EleutherAI/gpt-j-6B's config.json, less the dropouts and task params
  return {{"model_type", "gptj"},
          {"architectures", {"GPTJForCausalLM"}},
          {"activation_function", "gelu_new"},
          {"vocab_size", 50400},
          {"n_embd", 4096},
          {"n_head", 16},
          {"n_layer", 28},
          {"n_inner", nullptr},
          {"n_positions", 2048},
          {"layer_norm_epsilon", 1e-5},
          {"rotary", true},
          {"rotary_dim", 64},
          {"scale_attn_weights", true},
          {"tie_word_embeddings", false}};
}

nlohmann::json opt350m() {  // facebook/opt-350m's config.json, less the dropouts
  return {{"model_type", "opt"},
          {"architectures", {"OPTForCausalLM"}},
          {"activation_function", "relu"},
          {"vocab_size", 50272},
          {"hidden_size", 1024},
          {"ffn_dim", 4096},
          {"num_hidden_layers", 24},
          {"num_attention_heads", 16},
          {"max_position_embeddings", 2048},
          {"do_layer_norm_before", false},
          {"word_embed_proj_dim", 512},
          {"pad_token_id", 1},
          {"bos_token_id", 2},
          {"eos_token_id", 2}};
}

GptjConfig parseGptj(const nlohmann::json& j) {
  return GptjConfig::fromReader(ConfigReader(j, "gptj/config.json"));
}
OptConfig parseOpt(const nlohmann::json& j) {
  return OptConfig::fromReader(ConfigReader(j, "opt/config.json"));
}

TEST(GptjConfig, ReadsGptj6b) {
  const GptjConfig c = parseGptj(gptj6b());
  EXPECT_EQ(c.hiddenSize, 4096);
  EXPECT_EQ(c.numHeads, 16);
  EXPECT_EQ(c.numLayers, 28);
  EXPECT_EQ(c.headDim(), 256);
  EXPECT_EQ(c.rotaryDims, 64);
  EXPECT_EQ(c.mlpSize(), 4 * 4096);  // n_inner null: 4 · n_embd
  EXPECT_EQ(c.activation, "gelu_new");
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_NE(c.describe().find("gptj: 28 layers, 16 heads"), std::string::npos);
}

TEST(GptjConfig, DefaultsFollowTransformers) {
  // GPTJConfig(): rotary_dim 64 when absent; null rotates the whole head.
  GptjConfig c = parseGptj({{"n_embd", 256}, {"n_head", 2}});
  EXPECT_EQ(c.vocabSize, 50400);
  EXPECT_EQ(c.numLayers, 28);
  EXPECT_EQ(c.maxPositions, 2048);
  EXPECT_EQ(c.rotaryDims, 64);
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-5);
  c = parseGptj({{"n_embd", 256}, {"n_head", 2}, {"rotary_dim", nullptr}, {"n_inner", 300}});
  EXPECT_EQ(c.rotaryDims, 128);
  EXPECT_EQ(c.mlpSize(), 300);
  // transformers' attribute names are read where GPTJConfig's own are absent.
  c = parseGptj({{"hidden_size", 64},
                 {"num_attention_heads", 4},
                 {"num_hidden_layers", 2},
                 {"max_position_embeddings", 32},
                 {"rotary_dim", 8}});
  EXPECT_EQ(c.hiddenSize, 64);
  EXPECT_EQ(c.numHeads, 4);
  EXPECT_EQ(c.numLayers, 2);
  EXPECT_EQ(c.maxPositions, 32);
}

TEST(GptjConfig, BadValuesNameTheField) {
  const auto bad = [](const char* key, const nlohmann::json& value, const std::string& word) {
    nlohmann::json j = gptj6b();
    j[key] = value;
    test::expectError([&] { parseGptj(j); }, ErrorKind::Format, word);
    test::expectError([&] { parseGptj(j); }, ErrorKind::Format, "gptj/config.json");
  };
  bad("n_head", 3, "n_head (3)");
  bad("rotary_dim", 63, "rotary_dim");
  bad("rotary_dim", 512, "rotary_dim");  // more than the head's 256
  bad("n_embd", 64.5, "n_embd");
  bad("layer_norm_epsilon", 0, "layer_norm_epsilon");
  bad("n_inner", 0, "n_inner");
}

TEST(OptConfig, ReadsOpt350m) {
  const OptConfig c = parseOpt(opt350m());
  EXPECT_EQ(c.hiddenSize, 1024);
  EXPECT_EQ(c.ffnDim, 4096);
  EXPECT_EQ(c.headDim(), 64);
  EXPECT_EQ(c.wordEmbedProjDim, 512);
  EXPECT_TRUE(c.projects());
  EXPECT_FALSE(c.doLayerNormBefore);
  EXPECT_FALSE(c.finalNorm());  // a post-norm model has no final_layer_norm
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_NE(c.describe().find("post-norm"), std::string::npos);
}

TEST(OptConfig, DefaultsFollowTransformers) {
  // OPTConfig(): OPT-125m's sizes, ReLU, pre-norm with a final LayerNorm, biases, affine norms,
  // word_embed_proj_dim = hidden_size, tied head.
  OptConfig c = parseOpt({{"model_type", "opt"}});
  EXPECT_EQ(c.vocabSize, 50272);
  EXPECT_EQ(c.hiddenSize, 768);
  EXPECT_EQ(c.ffnDim, 3072);
  EXPECT_EQ(c.numLayers, 12);
  EXPECT_EQ(c.numHeads, 12);
  EXPECT_EQ(c.maxPositions, 2048);
  EXPECT_EQ(c.wordEmbedProjDim, 768);
  EXPECT_FALSE(c.projects());
  EXPECT_TRUE(c.doLayerNormBefore);
  EXPECT_TRUE(c.finalNorm());
  EXPECT_TRUE(c.enableBias);
  EXPECT_TRUE(c.layerNormAffine);
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_EQ(c.activation, "relu");
  c = parseOpt({{"_remove_final_layer_norm", true},
                {"enable_bias", false},
                {"layer_norm_elementwise_affine", false},
                {"word_embed_proj_dim", nullptr},
                {"d_model", 64},
                {"num_attention_heads", 4}});
  EXPECT_FALSE(c.finalNorm());
  EXPECT_FALSE(c.enableBias);
  EXPECT_FALSE(c.layerNormAffine);
  EXPECT_EQ(c.hiddenSize, 64);  // the first OPTConfig's d_model
  EXPECT_EQ(c.wordEmbedProjDim, 64);
}

TEST(OptConfig, BadValuesNameTheField) {
  const auto bad = [](const char* key, const nlohmann::json& value, const std::string& word) {
    nlohmann::json j = opt350m();
    j[key] = value;
    test::expectError([&] { parseOpt(j); }, ErrorKind::Format, word);
    test::expectError([&] { parseOpt(j); }, ErrorKind::Format, "opt/config.json");
  };
  bad("num_attention_heads", 3, "num_attention_heads (3)");
  bad("word_embed_proj_dim", 0, "word_embed_proj_dim");
  bad("ffn_dim", "4096", "ffn_dim");
  bad("do_layer_norm_before", 1, "do_layer_norm_before");
  bad("max_position_embeddings", 0, "max_position_embeddings");
}

nlohmann::json gptNeo125m() {  // EleutherAI/gpt-neo-125M's config.json, less the dropouts
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 6; ++i) layers.insert(layers.end(), {"global", "local"});
  return {{"model_type", "gpt_neo"},
          {"activation_function", "gelu_new"},
          {"attention_layers", layers},
          {"attention_types", {{{"global", "local"}, 6}}},
          {"hidden_size", 768},
          {"intermediate_size", nullptr},
          {"layer_norm_epsilon", 1e-5},
          {"max_position_embeddings", 2048},
          {"num_heads", 12},
          {"num_layers", 12},
          {"vocab_size", 50257},
          {"window_size", 256}};
}

GptNeoConfig parseGptNeo(const nlohmann::json& j) {
  return GptNeoConfig::fromReader(ConfigReader(j, "neo/config.json"));
}

TEST(GptNeoConfig, ReadsGptNeo125m) {
  const GptNeoConfig c = parseGptNeo(gptNeo125m());
  EXPECT_EQ(c.numLayers, 12);
  EXPECT_EQ(c.numHeads, 12);
  EXPECT_EQ(c.headDim(), 64);
  EXPECT_EQ(c.mlpSize(), 4 * 768);
  EXPECT_EQ(c.windowSize, 256);
  ASSERT_EQ(c.localLayers.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(c.localLayers[i], i % 2 == 1) << i;
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_NE(c.describe().find("6 local, window_size 256"), std::string::npos);
}

TEST(GptNeoConfig, DefaultsFollowTransformers) {
  // GPTNeoConfig(): 24 layers alternating global, local; window 256; gelu_new; tied.
  GptNeoConfig c = parseGptNeo({{"model_type", "gpt_neo"}});
  EXPECT_EQ(c.numLayers, 24);
  EXPECT_EQ(c.hiddenSize, 2048);
  EXPECT_EQ(c.vocabSize, 50257);
  EXPECT_EQ(c.localLayers.size(), 24u);
  EXPECT_TRUE(c.localLayers[1]);
  EXPECT_FALSE(c.localLayers[0]);
  EXPECT_EQ(c.activation, "gelu_new");
  c = parseGptNeo({{"num_layers", 3},
                   {"hidden_size", 64},
                   {"num_heads", 4},
                   {"intermediate_size", 100},
                   {"attention_types", {{{"local"}, 2}, {{"global"}, 1}}}});
  EXPECT_EQ(c.localLayers, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(c.mlpSize(), 100);
}

TEST(GptNeoConfig, BadValuesNameTheField) {
  const auto bad = [](const char* key, const nlohmann::json& value, const std::string& word) {
    nlohmann::json j = gptNeo125m();
    j[key] = value;
    test::expectError([&] { parseGptNeo(j); }, ErrorKind::Format, word);
    test::expectError([&] { parseGptNeo(j); }, ErrorKind::Format, "neo/config.json");
  };
  bad("num_heads", 5, "num_heads (5)");
  bad("window_size", 0, "window_size");
  bad("attention_types", {{{"global", "local"}, 5}}, "gives 10 layers, but num_layers is 12");
  bad("attention_types", {{{"global", "sparse"}, 6}}, "attention_types");
  bad("attention_types", {{{"global"}, 0}}, "attention_types");
  bad("attention_types", "global", "attention_types");
  // Absent, GPTNeoConfig's 24 default layers must match num_layers.
  nlohmann::json j = gptNeo125m();
  j.erase("attention_types");
  test::expectError([&] { parseGptNeo(j); }, ErrorKind::Format, "num_layers is 12");
}

}  // namespace
}  // namespace attnscope
