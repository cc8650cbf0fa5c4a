// SPDX-License-Identifier: GPL-3.0-or-later
// The config.json parsers of the encoder-decoder families (T5, BART and Marian): Hugging Face's
// defaults, the special tokens, the feed-forward spelling, the refused variants, and errors that
// name the file and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "models/bart_config.h"
#include "models/t5_config.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other config tests,
// which define helpers of the same shape.
namespace encoder_decoder_config_test {

nlohmann::json flanT5Small() {
  return {{"model_type", "t5"},
          {"vocab_size", 32128},
          {"d_model", 512},
          {"d_kv", 64},
          {"d_ff", 1024},
          {"num_layers", 8},
          {"num_decoder_layers", 8},
          {"num_heads", 6},
          {"relative_attention_num_buckets", 32},
          {"relative_attention_max_distance", 128},
          {"feed_forward_proj", "gated-gelu"},
          {"tie_word_embeddings", false},
          {"decoder_start_token_id", 0},
          {"eos_token_id", 1}};
}

T5Config parseT5(const nlohmann::json& j) {
  return T5Config::fromReader(ConfigReader(j, "t5/config.json"));
}

void expectT5Error(const nlohmann::json& j, const std::string& word) {
  test::expectFormatErrorIn([&] { parseT5(j); }, "t5/config.json", word);
}

TEST(T5Config, ReadsAFlanT5Config) {
  const T5Config c = parseT5(flanT5Small());
  EXPECT_EQ(c.modelType, "t5");
  EXPECT_EQ(c.dModel, 512);
  EXPECT_EQ(c.dKv, 64);  // num_heads * d_kv (384) need not be d_model
  EXPECT_EQ(c.numHeads, 6);
  EXPECT_EQ(c.numLayers, 8);
  EXPECT_EQ(c.numDecoderLayers, 8);
  EXPECT_TRUE(c.gated);
  EXPECT_EQ(c.activation, "gelu_new");  // transformers' reading of "gated-gelu"
  EXPECT_FALSE(c.tieWordEmbeddings);
  EXPECT_EQ(c.decoderStartTokenId, 0);
  EXPECT_EQ(c.eosTokenId, 1);
  EXPECT_NE(c.describe().find("8+8 layers, 6 heads of d_kv 64"), std::string::npos) << c.describe();
}

TEST(T5Config, DefaultsFollowTransformers) {
  nlohmann::json j = flanT5Small();
  for (const char* key :
       {"num_decoder_layers", "relative_attention_num_buckets", "relative_attention_max_distance",
        "feed_forward_proj", "tie_word_embeddings", "decoder_start_token_id", "eos_token_id"})
    j.erase(key);
  j["model_type"] = "mt5";
  const T5Config c = parseT5(j);
  EXPECT_EQ(c.modelType, "mt5");
  EXPECT_EQ(c.numDecoderLayers, 8);  // num_layers
  EXPECT_EQ(c.numBuckets, 32);
  EXPECT_EQ(c.maxDistance, 128);
  EXPECT_FALSE(c.gated);
  EXPECT_EQ(c.activation, "relu");
  EXPECT_TRUE(c.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-6);
  EXPECT_EQ(c.decoderStartTokenId, 0);  // the pad token
  EXPECT_EQ(c.eosTokenId, 1);
  j["feed_forward_proj"] = "gated-silu";  // "gated-<ACT2FN name>"
  EXPECT_TRUE(parseT5(j).gated);
  EXPECT_EQ(parseT5(j).activation, "silu");
}

TEST(T5Config, BadValuesNameTheField) {
  nlohmann::json j = flanT5Small();
  j["feed_forward_proj"] = "gelu-gated";
  expectT5Error(j,
                "\"feed_forward_proj\" \"gelu-gated\" must be an activation or "
                "gated-<activation>");
  j = flanT5Small();
  j["relative_attention_max_distance"] = 8;
  expectT5Error(j,
                "relative_attention_max_distance (8) must be above a quarter of "
                "relative_attention_num_buckets (32)");
  j = flanT5Small();
  j["relative_attention_num_buckets"] = 1;
  expectT5Error(j, "\"relative_attention_num_buckets\" must be a whole number from 2");
  j = flanT5Small();
  j.erase("d_kv");
  expectT5Error(j, "missing \"d_kv\"");
  j = flanT5Small();
  j["d_model"] = 512.5;
  expectT5Error(j, "\"d_model\" must be a whole number from 1 to 65536, got 512.5");
  j = flanT5Small();
  j["layer_norm_epsilon"] = 0;
  expectT5Error(j, "\"layer_norm_epsilon\" must be a positive number below 1");
  j = flanT5Small();
  j["tie_word_embeddings"] = "no";
  expectT5Error(j, "\"tie_word_embeddings\" must be true or false");
  j = flanT5Small();
  j["eos_token_id"] = -1;
  expectT5Error(j, "\"eos_token_id\" must be a whole number from 0");
}

nlohmann::json bartBase() {
  return {{"model_type", "bart"},
          {"vocab_size", 50265},
          {"d_model", 768},
          {"encoder_layers", 6},
          {"decoder_layers", 6},
          {"encoder_attention_heads", 12},
          {"decoder_attention_heads", 12},
          {"encoder_ffn_dim", 3072},
          {"decoder_ffn_dim", 3072},
          {"max_position_embeddings", 1024}};
}

BartConfig parseBart(const nlohmann::json& j, BartConfig::Flavour f = BartConfig::Flavour::Bart) {
  return BartConfig::fromReader(ConfigReader(j, "bart/config.json"), f);
}

void expectBartError(const nlohmann::json& j, const std::string& word,
                     BartConfig::Flavour f = BartConfig::Flavour::Bart) {
  test::expectFormatErrorIn([&] { parseBart(j, f); }, "bart/config.json", word);
}

TEST(BartConfig, BartAndMarianHaveTheirConfigClassDefaults) {
  const BartConfig bart = parseBart(bartBase());
  EXPECT_EQ(bart.encoderLayers, 6);
  EXPECT_EQ(bart.decoderLayers, 6);
  EXPECT_EQ(bart.numHeads, 12);
  EXPECT_EQ(bart.headDim(), 64);
  EXPECT_EQ(bart.encoderFfnDim, 3072);
  EXPECT_EQ(bart.maxPositions, 1024);
  EXPECT_EQ(bart.activation, "gelu");
  EXPECT_FALSE(bart.scaleEmbedding);
  EXPECT_TRUE(bart.tieWordEmbeddings);
  EXPECT_EQ(bart.decoderStartTokenId, 2);
  EXPECT_EQ(bart.eosTokenId, 2);
  EXPECT_EQ(bart.describe(),
            "bart: 6+6 layers, 12 heads, d_model 768, ffn 3072/3072, "
            "vocab_size 50265");

  nlohmann::json j = bartBase();
  j["model_type"] = "marian";
  j["vocab_size"] = 58101;  // opus-mt-en-de's: the pad token is the last id
  j["pad_token_id"] = 58100;
  const BartConfig marian = parseBart(j, BartConfig::Flavour::Marian);
  EXPECT_EQ(marian.activation, "swish");
  EXPECT_TRUE(marian.scaleEmbedding);
  EXPECT_EQ(marian.decoderStartTokenId, 58100);  // Marian starts decoding with its pad token
  EXPECT_EQ(marian.eosTokenId, 0);
  j.erase("pad_token_id");
  EXPECT_EQ(parseBart(j, BartConfig::Flavour::Marian).decoderStartTokenId, 0);
  j["decoder_start_token_id"] = 7;
  j["scale_embedding"] = false;
  j["activation_function"] = "relu";
  const BartConfig given = parseBart(j, BartConfig::Flavour::Marian);
  EXPECT_EQ(given.decoderStartTokenId, 7);
  EXPECT_FALSE(given.scaleEmbedding);
  EXPECT_EQ(given.activation, "relu");
}

TEST(BartConfig, BadValuesAndUnsupportedVariantsNameTheField) {
  nlohmann::json j = bartBase();
  j["decoder_attention_heads"] = 8;
  expectBartError(j, "decoder_attention_heads (8) must equal encoder_attention_heads (12)");
  j = bartBase();
  j["encoder_attention_heads"] = j["decoder_attention_heads"] = 7;
  expectBartError(j, "encoder_attention_heads (7) must divide d_model (768)");
  j = bartBase();
  j["normalize_before"] = true;
  expectBartError(j, "normalize_before / add_final_layer_norm (pre-norm layers, as mBART)");
  j = bartBase();
  j["add_final_layer_norm"] = true;
  expectBartError(j, "add_final_layer_norm");
  j = bartBase();
  j["share_encoder_decoder_embeddings"] = false;
  expectBartError(j, "share_encoder_decoder_embeddings false");
  j = bartBase();
  j["d_model"] = 771;
  j["encoder_attention_heads"] = j["decoder_attention_heads"] = 1;
  EXPECT_NO_THROW(parseBart(j));  // learned positions: any width
  expectBartError(j, "d_model must be even for sinusoidal positions, got 771",
                  BartConfig::Flavour::Marian);
  j = bartBase();
  j.erase("encoder_ffn_dim");
  expectBartError(j, "missing \"encoder_ffn_dim\"");
  j = bartBase();
  j["scale_embedding"] = 1;
  expectBartError(j, "\"scale_embedding\" must be true or false, got 1");
  j = bartBase();
  j["d_model"] = 1;
  expectBartError(j, "\"d_model\" must be a whole number from 2");
}

}  // namespace encoder_decoder_config_test
}  // namespace attnscope
