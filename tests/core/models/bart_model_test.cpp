// SPDX-License-Identifier: GPL-3.0-or-later
// The bart family (BART, Marian) through the public Model API: the Hugging Face parameter names,
// BART's decoder start, the position limit of the decoder input, Marian's vocab.json and broken
// configs. The numbers are checked against PyTorch in tests/reference/bart_reference.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target
// that define the same helper names.
namespace bart_test {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int kModel = 8, kFfn = 12, kPositions = 10;

using Shapes = std::map<std::string, std::vector<int64_t>>;

nlohmann::json bartConfig() {
  return {{"model_type", "bart"},
          {"vocab_size", kVocab},
          {"d_model", kModel},
          {"encoder_layers", 1},
          {"decoder_layers", 2},
          {"encoder_attention_heads", 2},
          {"decoder_attention_heads", 2},
          {"encoder_ffn_dim", kFfn},
          {"decoder_ffn_dim", kFfn},
          {"max_position_embeddings", kPositions},
          {"decoder_start_token_id", 2},
          {"eos_token_id", 1}};
}

Shapes bartShapes(bool learnedPositions) {
  Shapes s = {{"model.shared.weight", {kVocab, kModel}}, {"final_logits_bias", {1, kVocab}}};
  for (const bool decoder : {false, true}) {
    const std::string stack = std::string("model.") + (decoder ? "decoder" : "encoder");
    if (learnedPositions) {
      s[stack + ".embed_positions.weight"] = {kPositions + 2, kModel};
      s[stack + ".layernorm_embedding.weight"] = {kModel};
      s[stack + ".layernorm_embedding.bias"] = {kModel};
    }
    for (int l = 0; l < (decoder ? 2 : 1); ++l) {
      const std::string p = stack + ".layers." + std::to_string(l) + ".";
      std::vector<std::string> attention = {"self_attn"};
      if (decoder) attention.push_back("encoder_attn");
      for (const std::string& a : attention) {
        for (const char* m : {".q_proj", ".k_proj", ".v_proj", ".out_proj"}) {
          s[p + a + m + ".weight"] = {kModel, kModel};
          s[p + a + m + ".bias"] = {kModel};
        }
        s[p + a + "_layer_norm.weight"] = {kModel};
        s[p + a + "_layer_norm.bias"] = {kModel};
      }
      s[p + "fc1.weight"] = {kFfn, kModel};
      s[p + "fc1.bias"] = {kFfn};
      s[p + "fc2.weight"] = {kModel, kFfn};
      s[p + "fc2.bias"] = {kModel};
      s[p + "final_layer_norm.weight"] = {kModel};
      s[p + "final_layer_norm.bias"] = {kModel};
    }
  }
  return s;
}

std::shared_ptr<Model> open(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

TEST(BartModel, NamesDecoderStartAndPositionLimit) {
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, bartConfig(), bartShapes(true), 7, 0.5f));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "bart");
  EXPECT_EQ(i.layers, 1);
  EXPECT_EQ(i.decoderLayers, 2);
  EXPECT_EQ(i.maxPositions, kPositions);
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  // Registered without the "model." prefix the checkpoint's names carry; tied: no lm_head.
  EXPECT_EQ(got.size(), bartShapes(true).size());
  EXPECT_EQ(got.at("decoder.layers.1.encoder_attn.k_proj.bias"), (std::vector<int64_t>{kModel}));
  EXPECT_EQ(got.at("encoder.embed_positions.weight"),
            (std::vector<int64_t>{kPositions + 2, kModel}));

  RunRequest r;
  r.texts = {"the cat sat"};
  r.target = "a dog";
  const AttentionResult res = model->run(r);
  const AttentionGroup& dec = res.group("decoder_self");
  ASSERT_EQ(dec.tokens[0].size(), 3u);
  EXPECT_EQ(dec.tokens[0][0].id, 2);              // decoder_start_token_id
  EXPECT_EQ(res.group().tokens[0].back().id, 1);  // the source closed by eos_token_id
  EXPECT_EQ(res.nextTokens.size(), 1u);

  r.target = "the cat sat on the mat and the dog sat on";  // 11 + start > 10 positions
  test::expectError([&] { model->run(r); }, ErrorKind::InvalidArgument,
                    "the decoder input has 12 tokens, more than the model's 10 positions");
}

TEST(BartModel, BrokenConfigsAndMarianVocabularies) {
  test::TempDir a;
  nlohmann::json c = bartConfig();
  c["decoder_attention_heads"] = 4;
  test::expectError([&] { open(test::writeHfFolder(a, c, bartShapes(true), 7, 0.5f)); },
                    ErrorKind::Format, "decoder_attention_heads (4) must equal");
  test::TempDir pre;
  c = bartConfig();
  c["normalize_before"] = true;
  test::expectError([&] { open(test::writeHfFolder(pre, c, bartShapes(true), 7, 0.5f)); },
                    ErrorKind::Format, "normalize_before");
  test::TempDir b;  // BART without its learned positions: named
  test::expectError([&] { open(test::writeHfFolder(b, bartConfig(), bartShapes(false), 7, 0.5f)); },
                    ErrorKind::Format, "embed_positions.weight");

  // Marian: source.spm and target.spm with a vocab.json that lacks <unk>.
  test::TempDir m;
  c = bartConfig();
  c["model_type"] = "marian";
  c["eos_token_id"] = 0;
  c["decoder_start_token_id"] = 3;  // <pad>
  const std::string folder = test::writeHfFolder(m, c, bartShapes(false), 7, 0.5f);
  std::filesystem::remove(folder + "/tokenizer.json");
  for (const char* side : {"/source.spm", "/target.spm"})
    std::filesystem::copy_file(std::string(ATTNSCOPE_TEST_DATA) + "/tokenizers/unigram.model",
                               folder + side);
  std::ofstream(folder + "/vocab.json") << R"({"</s>": 0, "▁the": 1})";
  try {
    open(folder);
    ADD_FAILURE() << "a vocab.json without <unk> was accepted";
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unavailable) GTEST_SKIP() << e.what();  // no libsentencepiece
    EXPECT_EQ(e.kind(), ErrorKind::Format);
    EXPECT_NE(std::string(e.what()).find("has no \"<unk>\""), std::string::npos) << e.what();
  }
  std::ofstream(folder + "/vocab.json") << R"({"</s>": 0, "<unk>": 1, "▁the": 2, "<pad>": 3})";
  const auto marian = open(folder);
  EXPECT_EQ(marian->info().kind, "marian");
  RunRequest r;
  r.texts = {"the the xyz"};
  const AttentionResult res = marian->run(r);
  // Pieces outside vocab.json read as <unk>; </s> closes the source.
  const std::vector<Token>& tokens = res.group().tokens[0];
  ASSERT_GE(tokens.size(), 3u);
  EXPECT_EQ(tokens.front().id, 2);  // ▁the
  EXPECT_EQ(tokens.back().id, 0);   // </s>
  bool unknown = false;
  for (const Token& t : tokens) unknown |= t.id == 1 && t.unknown;
  EXPECT_TRUE(unknown);
}

}  // namespace bart_test
}  // namespace attnscope
