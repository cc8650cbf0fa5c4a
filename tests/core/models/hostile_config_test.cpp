// SPDX-License-Identifier: GPL-3.0-or-later
// Hostile config.json values (issue 34) that were accepted and then went wrong: a BERT with
// relative positions computed as absolute (silently wrong attention), a negative layer_norm_eps,
// a rope_theta that overflowed float32 and a decoder start token outside the vocabulary (both
// internal errors, exit 1). Each is now a config error naming the file and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/bart_config.h"
#include "models/bert_config.h"
#include "models/gpt_neox_config.h"
#include "models/llama_config.h"
#include "models/t5_config.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other config tests.
namespace hostile_config_test {

using test::expectFormatErrorIn;

nlohmann::json bert() {
  return {{"vocab_size", 100},        {"hidden_size", 8},        {"num_hidden_layers", 1},
          {"num_attention_heads", 2}, {"intermediate_size", 16}, {"max_position_embeddings", 16},
          {"layer_norm_eps", 1e-12}};
}

TEST(HostileConfig, BertRefusesPositionEmbeddingsOtherThanAbsolute) {
  nlohmann::json j = bert();
  j["position_embedding_type"] = "absolute";
  EXPECT_EQ(BertConfig::fromReader(ConfigReader(j, "b/config.json"), BertConfig::Flavour::Bert)
                .hiddenSize,
            8);
  for (const char* type : {"relative_key", "relative_key_query"}) {
    j["position_embedding_type"] = type;
    for (auto flavour : {BertConfig::Flavour::Bert, BertConfig::Flavour::Roberta,
                         BertConfig::Flavour::Electra, BertConfig::Flavour::Albert}) {
      expectFormatErrorIn(
          [&] { BertConfig::fromReader(ConfigReader(j, "b/config.json"), flavour); },
          "b/config.json",
          "\"position_embedding_type\" \"" + std::string(type) +
              "\" is not supported (only \"absolute\")");
    }
  }
}

TEST(HostileConfig, BertRefusesANonPositiveLayerNormEps) {
  for (double eps : {-1e-12, 0.0, 2.0}) {
    nlohmann::json j = bert();
    j["layer_norm_eps"] = eps;
    expectFormatErrorIn(
        [&] {
          BertConfig::fromReader(ConfigReader(j, "b/config.json"), BertConfig::Flavour::Bert);
        },
        "b/config.json", "\"layer_norm_eps\" must be a positive number below 1");
  }
}

TEST(HostileConfig, RopeBasesThatOverflowFloat32AreConfigErrors) {
  const nlohmann::json llama = {{"vocab_size", 100},        {"hidden_size", 8},
                                {"intermediate_size", 16},  {"num_hidden_layers", 1},
                                {"num_attention_heads", 2}, {"rope_theta", 1e308}};
  expectFormatErrorIn([&] { LlamaConfig::fromReader(ConfigReader(llama, "l/config.json")); },
                      "l/config.json",
                      "\"rope_theta\" must be above 1 and at most 1e30, got 1e+308");
  const nlohmann::json neox = {{"vocab_size", 100},        {"hidden_size", 8},
                               {"intermediate_size", 16},  {"num_hidden_layers", 1},
                               {"num_attention_heads", 2}, {"max_position_embeddings", 16},
                               {"rotary_pct", 1.0},        {"rotary_emb_base", 1e39}};
  expectFormatErrorIn([&] { GptNeoxConfig::fromReader(ConfigReader(neox, "n/config.json")); },
                      "n/config.json", "\"rotary_emb_base\" must be above 1 and at most 1e30");
}

TEST(HostileConfig, SpecialTokenIdsMustIndexTheVocabulary) {
  const nlohmann::json t5 = {{"vocab_size", 100},
                             {"d_model", 8},
                             {"d_kv", 4},
                             {"d_ff", 16},
                             {"num_layers", 1},
                             {"num_heads", 2},
                             {"decoder_start_token_id", 999999}};
  expectFormatErrorIn([&] { T5Config::fromReader(ConfigReader(t5, "t/config.json")); },
                      "t/config.json",
                      "\"decoder_start_token_id\" (999999) must be below vocab_size (100)");
  nlohmann::json eos = t5;
  eos["decoder_start_token_id"] = 0;
  eos["eos_token_id"] = 100;
  expectFormatErrorIn([&] { T5Config::fromReader(ConfigReader(eos, "t/config.json")); },
                      "t/config.json", "\"eos_token_id\" (100) must be below vocab_size (100)");
  const nlohmann::json bart = {{"vocab_size", 100},
                               {"d_model", 8},
                               {"encoder_layers", 1},
                               {"decoder_layers", 1},
                               {"encoder_attention_heads", 2},
                               {"decoder_attention_heads", 2},
                               {"encoder_ffn_dim", 16},
                               {"decoder_ffn_dim", 16},
                               {"decoder_start_token_id", 100}};
  expectFormatErrorIn(
      [&] {
        BartConfig::fromReader(ConfigReader(bart, "m/config.json"), BartConfig::Flavour::Bart);
      },
      "m/config.json", "\"decoder_start_token_id\" (100) must be below vocab_size (100)");
}

}  // namespace hostile_config_test
}  // namespace attnscope
