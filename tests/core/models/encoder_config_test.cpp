// SPDX-License-Identifier: GPL-3.0-or-later
// The config.json parsers of the encoder families (BERT, RoBERTa, ELECTRA, ALBERT through
// BertConfig; DistilBERT): Hugging Face's defaults and key spellings, and errors that name the
// file and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "expect_error.h"
#include "models/bert_config.h"
#include "models/config_reader.h"
#include "models/deberta_config.h"
#include "models/distilbert_config.h"
#include "models/modernbert_config.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other config tests,
// which define helpers of the same shape.
namespace encoder_config_test {

using Flavour = BertConfig::Flavour;

nlohmann::json bertBase() {
  return {
      {"model_type", "bert"},           {"vocab_size", 30522},       {"hidden_size", 768},
      {"num_hidden_layers", 12},        {"num_attention_heads", 12}, {"intermediate_size", 3072},
      {"max_position_embeddings", 512}, {"type_vocab_size", 2},      {"layer_norm_eps", 1e-12},
      {"hidden_act", "gelu"},           {"pad_token_id", 0}};
}

BertConfig parseBert(const nlohmann::json& j, Flavour f = Flavour::Bert) {
  return BertConfig::fromReader(ConfigReader(j, "bert/config.json"), f);
}

void expectBertError(const nlohmann::json& j, const std::string& word, Flavour f = Flavour::Bert) {
  test::expectFormatErrorIn([&] { parseBert(j, f); }, "bert/config.json", word);
}

TEST(BertConfig, ReadsABertBaseConfig) {
  const BertConfig c = parseBert(bertBase());
  EXPECT_EQ(c.vocabSize, 30522);
  EXPECT_EQ(c.hiddenSize, 768);
  EXPECT_EQ(c.numLayers, 12);
  EXPECT_EQ(c.numHeads, 12);
  EXPECT_EQ(c.intermediateSize, 3072);
  EXPECT_EQ(c.maxPositions, 512);
  EXPECT_EQ(c.typeVocabSize, 2);
  EXPECT_EQ(c.embeddingSize, 768);  // hidden_size when not given
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-12);
  EXPECT_EQ(c.hiddenAct, "gelu");
  EXPECT_EQ(c.padTokenId, 0);
  EXPECT_EQ(c.numHiddenGroups, 1);
  EXPECT_EQ(c.innerGroupNum, 1);
}

TEST(BertConfig, FlavoursHaveTheirConfigClassDefaults) {
  nlohmann::json j = bertBase();
  j.erase("pad_token_id");
  j.erase("hidden_act");
  j.erase("type_vocab_size");
  j.erase("layer_norm_eps");
  EXPECT_EQ(parseBert(j, Flavour::Bert).padTokenId, 0);
  EXPECT_EQ(parseBert(j, Flavour::Electra).padTokenId, 0);
  EXPECT_EQ(parseBert(j, Flavour::Roberta).padTokenId, 1);  // positions start after it
  const BertConfig bert = parseBert(j);
  EXPECT_EQ(bert.typeVocabSize, 2);
  EXPECT_DOUBLE_EQ(bert.layerNormEps, 1e-12);
  EXPECT_EQ(bert.hiddenAct, "gelu");
  const BertConfig albert = parseBert(j, Flavour::Albert);
  EXPECT_EQ(albert.embeddingSize, 128);  // factorised, projected to hidden_size
  EXPECT_EQ(albert.hiddenAct, "gelu_new");
  j["embedding_size"] = 256;  // ELECTRA's narrower embeddings
  j["type_vocab_size"] = 0;   // no token-type table
  const BertConfig electra = parseBert(j, Flavour::Electra);
  EXPECT_EQ(electra.embeddingSize, 256);
  EXPECT_EQ(electra.typeVocabSize, 0);
}

TEST(BertConfig, AlbertGroupsItsLayers) {
  nlohmann::json j = bertBase();
  j["num_hidden_groups"] = 3;
  j["inner_group_num"] = 2;
  EXPECT_EQ(parseBert(j).numHiddenGroups, 1) << "only ALBERT shares layers";
  const BertConfig c = parseBert(j, Flavour::Albert);
  EXPECT_EQ(c.numHiddenGroups, 3);
  EXPECT_EQ(c.innerGroupNum, 2);
  // ALBERT has no pad_token_id of its own to check: a BERT-only field is not read.
  j["pad_token_id"] = -1;
  EXPECT_NO_THROW(parseBert(j, Flavour::Albert));
  expectBertError(j, "\"pad_token_id\" must be a whole number from 0");
}

TEST(BertConfig, BadValuesNameTheField) {
  nlohmann::json j = bertBase();
  j["num_attention_heads"] = 5;
  expectBertError(j, "num_attention_heads (5) must divide hidden_size (768)");
  j = bertBase();
  j.erase("intermediate_size");
  expectBertError(j, "missing \"intermediate_size\"");
  j = bertBase();
  j["hidden_size"] = 768.5;
  expectBertError(j, "\"hidden_size\" must be a whole number from 1 to 65536, got 768.5");
  j = bertBase();
  j["num_hidden_layers"] = 300;
  expectBertError(j, "\"num_hidden_layers\" must be a whole number from 1 to 256, got 300");
  j = bertBase();
  j["type_vocab_size"] = true;
  expectBertError(j, "\"type_vocab_size\" must be a whole number");
  j = bertBase();
  j["layer_norm_eps"] = "small";
  expectBertError(j, "\"layer_norm_eps\" must be a number, got \"small\"");
  j = bertBase();
  j["hidden_act"] = 3;
  expectBertError(j, "\"hidden_act\" must be a string, got 3");
  j = bertBase();
  j["num_hidden_layers"] = 4;
  j["num_hidden_groups"] = 3;
  expectBertError(j, "num_hidden_groups (3) must divide num_hidden_layers (4)", Flavour::Albert);
  j["num_hidden_groups"] = 2;
  j["inner_group_num"] = 0;
  expectBertError(j, "\"inner_group_num\" must be a whole number from 1 to 64", Flavour::Albert);
}

nlohmann::json distilbertBase() {
  return {{"model_type", "distilbert"},
          {"vocab_size", 30522},
          {"dim", 768},
          {"n_layers", 6},
          {"n_heads", 12},
          {"hidden_dim", 3072},
          {"max_position_embeddings", 512}};
}

DistilBertConfig parseDistilBert(const nlohmann::json& j) {
  return DistilBertConfig::fromReader(ConfigReader(j, "distil/config.json"));
}

TEST(DistilBertConfig, ReadsEitherKeySpelling) {
  const DistilBertConfig c = parseDistilBert(distilbertBase());
  EXPECT_EQ(c.hiddenSize, 768);
  EXPECT_EQ(c.numLayers, 6);
  EXPECT_EQ(c.numHeads, 12);
  EXPECT_EQ(c.intermediateSize, 3072);
  EXPECT_EQ(c.maxPositions, 512);
  EXPECT_EQ(c.activation, "gelu");
  const nlohmann::json bertSpelling = {{"vocab_size", 100},       {"hidden_size", 32},
                                       {"num_hidden_layers", 2},  {"num_attention_heads", 4},
                                       {"intermediate_size", 48}, {"max_position_embeddings", 64},
                                       {"activation", "relu"}};
  const DistilBertConfig d = parseDistilBert(bertSpelling);
  EXPECT_EQ(d.hiddenSize, 32);
  EXPECT_EQ(d.numLayers, 2);
  EXPECT_EQ(d.numHeads, 4);
  EXPECT_EQ(d.intermediateSize, 48);
  EXPECT_EQ(d.activation, "relu");
}

TEST(DistilBertConfig, BadValuesNameTheField) {
  const auto expectBad = [](const nlohmann::json& j, const std::string& word) {
    test::expectFormatErrorIn([&] { parseDistilBert(j); }, "distil/config.json", word);
  };
  nlohmann::json j = distilbertBase();
  j["n_heads"] = 5;
  expectBad(j, "n_heads (5) must divide dim (768)");
  j = distilbertBase();
  j.erase("dim");
  expectBad(j, "missing \"dim\"");
  j = distilbertBase();
  j["n_layers"] = "six";
  expectBad(j, "\"n_layers\" must be a whole number from 1 to 256, got \"six\"");
  j = distilbertBase();
  j["activation"] = false;
  expectBad(j, "\"activation\" must be a string");
}

/// answerdotai/ModernBERT-base's config.json (the fields the family reads).
nlohmann::json modernBertBase() {
  return {{"model_type", "modernbert"},
          {"vocab_size", 50368},
          {"hidden_size", 768},
          {"intermediate_size", 1152},
          {"num_hidden_layers", 22},
          {"num_attention_heads", 12},
          {"hidden_activation", "gelu"},
          {"max_position_embeddings", 8192},
          {"norm_eps", 1e-05},
          {"norm_bias", false},
          {"global_rope_theta", 160000.0},
          {"local_rope_theta", 10000.0},
          {"global_attn_every_n_layers", 3},
          {"local_attention", 128},
          {"pad_token_id", 50283},
          {"decoder_bias", true},
          {"classifier_activation", "gelu"}};
}

ModernBertConfig parseModernBert(const nlohmann::json& j) {
  return ModernBertConfig::fromReader(ConfigReader(j, "mb/config.json"));
}

TEST(ModernBertConfig, ReadsModernBertBaseAndTheConfigClassDefaults) {
  for (const nlohmann::json& j : {modernBertBase(), nlohmann::json{{"model_type", "modernbert"}}}) {
    const ModernBertConfig c = parseModernBert(j);  // the base config, then every default
    EXPECT_EQ(c.vocabSize, 50368);
    EXPECT_EQ(c.hiddenSize, 768);
    EXPECT_EQ(c.intermediateSize, 1152);
    EXPECT_EQ(c.numLayers, 22);
    EXPECT_EQ(c.numHeads, 12);
    EXPECT_EQ(c.headDim(), 64);
    EXPECT_EQ(c.maxPositions, 8192);
    EXPECT_EQ(c.padTokenId, 50283);
    EXPECT_EQ(c.hiddenAct, "gelu");
    EXPECT_EQ(c.classifierAct, "gelu");
    EXPECT_DOUBLE_EQ(c.normEps, 1e-5);
    EXPECT_FALSE(c.normBias);
    EXPECT_FALSE(c.attentionBias);
    EXPECT_FALSE(c.mlpBias);
    EXPECT_FALSE(c.classifierBias);
    EXPECT_TRUE(c.decoderBias);
    EXPECT_TRUE(c.tieWordEmbeddings);
    EXPECT_DOUBLE_EQ(c.globalRopeTheta, 160000.0);
    EXPECT_DOUBLE_EQ(c.localRopeTheta, 10000.0);
    EXPECT_EQ(c.localAttention, 128);
    EXPECT_EQ(c.windowRadius(), 64);  // |i - j| <= local_attention // 2
    // Global on 0, 3, 6, ...: layer i is local when i % global_attn_every_n_layers != 0.
    for (int l = 0; l < 22; ++l) EXPECT_EQ(c.windowed(l), l % 3 != 0) << l;
  }
}

TEST(ModernBertConfig, ReadsLayerTypesAndRopeParameters) {
  nlohmann::json j = modernBertBase();
  j["num_hidden_layers"] = 4;
  j["global_attn_every_n_layers"] = 2;
  j["local_attention"] = 5;  // odd: the radius rounds down, as transformers' // 2
  j["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "sliding_attention"};
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 8e5}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 2e4}}}};
  j["norm_bias"] = true;
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  j["classifier_bias"] = true;
  j["decoder_bias"] = false;
  j["tie_word_embeddings"] = false;
  const ModernBertConfig c = parseModernBert(j);
  EXPECT_EQ(c.slidingLayers, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(c.windowRadius(), 2);
  EXPECT_DOUBLE_EQ(c.globalRopeTheta, 8e5);
  EXPECT_DOUBLE_EQ(c.localRopeTheta, 2e4);
  EXPECT_TRUE(c.normBias && c.attentionBias && c.mlpBias && c.classifierBias);
  EXPECT_FALSE(c.decoderBias);
  EXPECT_FALSE(c.tieWordEmbeddings);
}

TEST(ModernBertConfig, BadValuesNameTheField) {
  const auto expectBad = [](const nlohmann::json& j, const std::string& word) {
    test::expectFormatErrorIn([&] { parseModernBert(j); }, "mb/config.json", word);
  };
  nlohmann::json j = modernBertBase();
  j["num_attention_heads"] = 5;
  expectBad(j, "num_attention_heads (5) must divide hidden_size (768)");
  j = modernBertBase();
  j["hidden_size"] = 36;  // 12 heads of 3: odd
  expectBad(j, "must be even for rotary positions");
  j = modernBertBase();
  j["local_attention"] = 0;
  expectBad(j, "\"local_attention\" must be a whole number from 1");
  j = modernBertBase();
  j["global_attn_every_n_layers"] = 0;
  expectBad(j, "\"global_attn_every_n_layers\" must be a whole number from 1");
  j = modernBertBase();
  j["local_rope_theta"] = 0.5;
  expectBad(j, "\"global_rope_theta\" and \"local_rope_theta\" must be above 1");
  j = modernBertBase();
  j["norm_eps"] = -1;
  expectBad(j, "\"norm_eps\" must be a positive number");
  j = modernBertBase();
  j["pad_token_id"] = 50368;
  expectBad(j, "\"pad_token_id\" (50368) must be below vocab_size (50368)");
  j = modernBertBase();
  j["num_hidden_layers"] = 2;
  j["layer_types"] = {"full_attention"};
  expectBad(j, "\"layer_types\" must list one type for each of the 2 layers");
  j["layer_types"] = {"full_attention", "full_attention"};  // layer 1 is local (every 3)
  expectBad(j, "\"layer_types\"[1] must be \"sliding_attention\"");
  j = modernBertBase();
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "yarn"}, {"factor", 2}}}};
  expectBad(j, "\"rope_type\" \"yarn\" is not supported");
  j = modernBertBase();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2}};
  expectBad(j, "\"rope_scaling\" is not supported");
  j = modernBertBase();
  j["norm_bias"] = "no";
  expectBad(j, "norm_bias");
}

nlohmann::json debertaV3Base() {
  return nlohmann::json::parse(R"({
    "model_type": "deberta-v2", "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "max_position_embeddings": 512, "relative_attention": true, "position_buckets": 256,
    "norm_rel_ebd": "layer_norm", "share_att_key": true, "pos_att_type": "p2c|c2p",
    "layer_norm_eps": 1e-7, "max_relative_positions": -1, "position_biased_input": false,
    "type_vocab_size": 0, "vocab_size": 128100})");
}

DebertaConfig parseDeberta(const nlohmann::json& j) {
  return DebertaConfig::fromReader(ConfigReader(j, "deberta/config.json"));
}

TEST(DebertaConfig, ReadsDebertaV3BaseAndTheConfigClassDefaults) {
  const DebertaConfig c = parseDeberta(debertaV3Base());
  EXPECT_EQ(c.hiddenSize, 768);
  EXPECT_EQ(c.embeddingSize, 768);
  EXPECT_EQ(c.numHeads, 12);
  EXPECT_TRUE(c.relativeAttention);
  EXPECT_EQ(c.maxRelativePositions, 512);  // -1: max_position_embeddings
  EXPECT_EQ(c.positionBuckets, 256);
  EXPECT_EQ(c.span(), 256);
  EXPECT_TRUE(c.relEmbeddingNorm);
  EXPECT_TRUE(c.shareAttKey);
  EXPECT_TRUE(c.c2p && c.p2c);
  EXPECT_EQ(c.scaleFactor(), 3);
  EXPECT_FALSE(c.positionBiasedInput);
  EXPECT_EQ(c.typeVocabSize, 0);
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-7);

  // DebertaV2Config's defaults (and the modules' getattr fallbacks).
  const DebertaConfig d = parseDeberta({{"model_type", "deberta-v2"}});
  EXPECT_EQ(d.vocabSize, 128100);
  EXPECT_EQ(d.hiddenSize, 1536);
  EXPECT_EQ(d.numLayers, 24);
  EXPECT_EQ(d.numHeads, 24);
  EXPECT_EQ(d.intermediateSize, 6144);
  EXPECT_EQ(d.maxPositions, 512);
  EXPECT_EQ(d.typeVocabSize, 0);
  EXPECT_EQ(d.hiddenAct, "gelu");
  EXPECT_DOUBLE_EQ(d.layerNormEps, 1e-7);
  EXPECT_FALSE(d.relativeAttention);
  EXPECT_TRUE(d.positionBiasedInput);
  EXPECT_EQ(d.positionBuckets, -1);
  EXPECT_EQ(d.span(), 512);
  EXPECT_FALSE(d.shareAttKey || d.relEmbeddingNorm || d.c2p || d.p2c);
  EXPECT_EQ(d.scaleFactor(), 1);
  EXPECT_FALSE(d.hasC2p());
}

TEST(DebertaConfig, ReadsPosAttTypeAsAListOrAString) {
  nlohmann::json j = debertaV3Base();
  j["pos_att_type"] = {"c2p"};
  DebertaConfig c = parseDeberta(j);
  EXPECT_TRUE(c.c2p);
  EXPECT_FALSE(c.p2c);
  EXPECT_EQ(c.scaleFactor(), 2);
  j["pos_att_type"] = " P2C | p2p ";  // a string is lower-cased and stripped; v2 reads no p2p
  c = parseDeberta(j);
  EXPECT_TRUE(c.p2c);
  EXPECT_FALSE(c.c2p);
  EXPECT_EQ(c.scaleFactor(), 2);
  j["pos_att_type"] = nullptr;
  EXPECT_EQ(parseDeberta(j).scaleFactor(), 1);
  // Without relative_attention the terms are off, but pos_att_type still sets the scale.
  j = debertaV3Base();
  j["relative_attention"] = false;
  c = parseDeberta(j);
  EXPECT_FALSE(c.hasC2p() || c.hasP2c());
  EXPECT_EQ(c.scaleFactor(), 3);
  j = debertaV3Base();
  j["position_buckets"] = -1;
  j["max_relative_positions"] = 64;
  j["embedding_size"] = 128;
  c = parseDeberta(j);
  EXPECT_EQ(c.span(), 64);
  EXPECT_EQ(c.embeddingSize, 128);
}

TEST(DebertaConfig, ReadsV2XlargeConvLayer) {
  nlohmann::json j = debertaV3Base();
  EXPECT_EQ(parseDeberta(j).convKernelSize, 0);
  j["conv_kernel_size"] = 3;
  DebertaConfig c = parseDeberta(j);
  EXPECT_EQ(c.convKernelSize, 3);
  EXPECT_EQ(c.convGroups, 1);    // getattr(config, "conv_groups", 1)
  EXPECT_EQ(c.convAct, "tanh");  // getattr(config, "conv_act", "tanh")
  j["conv_groups"] = 4;
  j["conv_act"] = "gelu";
  c = parseDeberta(j);
  EXPECT_EQ(c.convGroups, 4);
  EXPECT_EQ(c.convAct, "gelu");
  j["conv_kernel_size"] = 0;  // no ConvLayer: conv_groups and conv_act unread
  j["conv_groups"] = 5;
  EXPECT_EQ(parseDeberta(j).convKernelSize, 0);
}

nlohmann::json debertaV1Base() {  // microsoft/deberta-base
  return nlohmann::json::parse(R"({
    "model_type": "deberta", "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "relative_attention": true,
    "pos_att_type": "c2p|p2c", "layer_norm_eps": 1e-7, "max_relative_positions": -1,
    "position_biased_input": false, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 0, "vocab_size": 50265})");
}

TEST(DebertaConfig, ReadsDebertaV1BaseAndItsConfigClassDefaults) {
  const DebertaConfig c = parseDeberta(debertaV1Base());
  EXPECT_TRUE(c.v1());
  EXPECT_TRUE(c.hasC2p() && c.hasP2c());
  EXPECT_EQ(c.scaleFactor(), 3);
  EXPECT_EQ(c.maxRelativePositions, 512);  // -1: max_position_embeddings
  EXPECT_EQ(c.span(), 512);
  EXPECT_EQ(c.positionBuckets, -1);
  EXPECT_FALSE(c.positionBiasedInput);
  // DebertaConfig's defaults.
  const DebertaConfig d = parseDeberta({{"model_type", "deberta"}});
  EXPECT_TRUE(d.v1());
  EXPECT_EQ(d.vocabSize, 50265);
  EXPECT_EQ(d.hiddenSize, 768);
  EXPECT_EQ(d.embeddingSize, 768);
  EXPECT_EQ(d.numLayers, 12);
  EXPECT_EQ(d.numHeads, 12);
  EXPECT_EQ(d.intermediateSize, 3072);
  EXPECT_EQ(d.maxPositions, 512);
  EXPECT_EQ(d.typeVocabSize, 0);
  EXPECT_DOUBLE_EQ(d.layerNormEps, 1e-7);
  EXPECT_TRUE(d.positionBiasedInput);  // position_biased_input defaults to true
  EXPECT_FALSE(d.relativeAttention || d.c2p || d.p2c);
  EXPECT_EQ(d.scaleFactor(), 1);
  // model_type picks the flavour unless it is given.
  EXPECT_FALSE(parseDeberta(debertaV3Base()).v1());
  EXPECT_TRUE(DebertaConfig::fromReader(ConfigReader(debertaV3Base(), "deberta/config.json"),
                                        DebertaConfig::Flavour::V1)
                  .v1());
}

TEST(DebertaConfig, V1CountsEveryPosAttTypeInTheScaleAndReadsNoV2Keys) {
  nlohmann::json j = debertaV1Base();
  j["pos_att_type"] = "c2p|p2c|p2p";  // p2p adds no term in transformers, only to scale_factor
  DebertaConfig c = parseDeberta(j);
  EXPECT_EQ(c.scaleFactor(), 4);
  EXPECT_TRUE(c.c2p && c.p2c);
  j["model_type"] = "deberta-v2";  // v2 counts c2p and p2c only
  EXPECT_EQ(parseDeberta(j).scaleFactor(), 3);
  j = debertaV1Base();
  j["pos_att_type"] = {"C2P"};  // a list is taken as written: no c2p term, one to the scale
  c = parseDeberta(j);
  EXPECT_FALSE(c.c2p);
  EXPECT_EQ(c.scaleFactor(), 2);
  // Keys only v2's modules read: ignored by v1 however wrong they would be there.
  j = debertaV1Base();
  j["position_buckets"] = 1;
  j["share_att_key"] = true;
  j["norm_rel_ebd"] = "layer_norm";
  j["conv_kernel_size"] = 4;
  j["attention_head_size"] = 32;
  j["talking_head"] = false;
  c = parseDeberta(j);
  EXPECT_EQ(c.positionBuckets, -1);
  EXPECT_FALSE(c.shareAttKey || c.relEmbeddingNorm);
  EXPECT_EQ(c.convKernelSize, 0);
  EXPECT_EQ(c.headDim(), 64);
  j["talking_head"] = true;
  test::expectFormatErrorIn([&] { parseDeberta(j); }, "deberta/config.json", "\"talking_head\"");
}

TEST(DebertaConfig, BadValuesNameTheField) {
  const auto expectBad = [](const nlohmann::json& j, const std::string& word) {
    test::expectFormatErrorIn([&] { parseDeberta(j); }, "deberta/config.json", word);
  };
  nlohmann::json j = debertaV3Base();
  j["num_attention_heads"] = 5;
  expectBad(j, "num_attention_heads (5) must divide hidden_size (768)");
  j = debertaV3Base();
  j["conv_kernel_size"] = 4;
  expectBad(j, "\"conv_kernel_size\" 4 must be odd");
  j["conv_kernel_size"] = 3;
  j["conv_groups"] = 5;
  expectBad(j, "conv_groups (5) must divide hidden_size (768)");
  j["conv_groups"] = 0;
  expectBad(j, "conv_groups");
  j = debertaV3Base();
  j["attention_head_size"] = 32;
  expectBad(j, "\"attention_head_size\" (32)");
  j = debertaV3Base();
  j["position_buckets"] = 1;
  expectBad(j, "\"position_buckets\" (1) must be at least 2");
  j = debertaV3Base();
  j["max_relative_positions"] = 129;  // log((129 - 1) / 128) = 0 would divide
  expectBad(j, "max_relative_positions - 1 (128)");
  j = debertaV3Base();
  j["pos_att_type"] = 3;
  expectBad(j, "\"pos_att_type\" must be a string");
  j["pos_att_type"] = {"c2p", 1};
  expectBad(j, "\"pos_att_type\" must list strings");
  j = debertaV3Base();
  j["layer_norm_eps"] = 0;
  expectBad(j, "\"layer_norm_eps\" must be a positive number");
  j = debertaV3Base();
  j["pad_token_id"] = 128100;
  expectBad(j, "\"pad_token_id\" (128100) must be below vocab_size (128100)");
  j = debertaV3Base();
  j["share_att_key"] = "yes";
  expectBad(j, "share_att_key");
  j = debertaV3Base();
  j["type_vocab_size"] = -1;
  expectBad(j, "\"type_vocab_size\" must be a whole number from 0");
}

// Issue #32 (13): a config.json cut short (an interrupted download) is a parse error that names
// the file and where the text ends, not "not a JSON object".
TEST(ConfigReader, TruncatedConfigIsAParseErrorWithItsPlace) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "attnscope_truncated_config_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  const std::string whole = bertBase().dump(2);
  const std::string cut = whole.substr(0, whole.size() / 2);
  std::ofstream(path, std::ios::binary) << cut;
  const auto lines = std::count(cut.begin(), cut.end(), '\n') + 1;
  try {
    ConfigReader::fromFile(path);
    ADD_FAILURE() << "a truncated config.json was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Format) << what;
    EXPECT_NE(what.find(path + ": "), std::string::npos) << what;
    EXPECT_EQ(what.find("not a JSON object"), std::string::npos) << what;
    EXPECT_NE(what.find("parse error at line " + std::to_string(lines)), std::string::npos) << what;
    // nlohmann counts the end of input as one more character read.
    EXPECT_NE(what.find("byte " + std::to_string(cut.size() + 1)), std::string::npos) << what;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace encoder_config_test
}  // namespace attnscope
