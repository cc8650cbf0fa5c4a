// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnscope::test::t5_fixture {

/// A tiny T5 checkpoint's config and tensor shapes, for writeHfFolder: 2 encoder and 3 decoder
/// layers, 2 heads of d_kv 6 (inner 12 != d_model 16), 8 relative-position buckets, over the
/// word-level tokenizer fixture (tests/data/tokenizers/wordlevel.json). The T5 tests and the
/// on-demand attention tests write the same one.
constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int kModel = 16, kHeads = 2, kKv = 6, kFf = 20, kBuckets = 8;
constexpr int kEncoderLayers = 2, kDecoderLayers = 3;
constexpr int64_t kEos = 1;  // "." in the fixture: a plain token, so a target keeps it

using Shapes = std::map<std::string, std::vector<int64_t>>;

inline nlohmann::json t5Config() {
  return {{"model_type", "t5"},
          {"vocab_size", kVocab},
          {"d_model", kModel},
          {"d_kv", kKv},
          {"d_ff", kFf},
          {"num_layers", kEncoderLayers},
          {"num_decoder_layers", kDecoderLayers},
          {"num_heads", kHeads},
          {"relative_attention_num_buckets", kBuckets},
          {"relative_attention_max_distance", 16},
          {"feed_forward_proj", "gated-gelu"},
          {"tie_word_embeddings", true},
          {"decoder_start_token_id", 0},
          {"eos_token_id", kEos}};
}

inline Shapes t5Shapes(bool gated, bool head) {
  const int64_t inner = kHeads * kKv;
  Shapes s = {
      {"shared.weight", {kVocab, kModel}},
      {"encoder.final_layer_norm.weight", {kModel}},
      {"decoder.final_layer_norm.weight", {kModel}},
      {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", {kBuckets, kHeads}},
      {"decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", {kBuckets, kHeads}}};
  if (head) s["lm_head.weight"] = {kVocab, kModel};
  for (const bool decoder : {false, true}) {
    const std::string stack = decoder ? "decoder" : "encoder";
    for (int l = 0; l < (decoder ? kDecoderLayers : kEncoderLayers); ++l) {
      const std::string p = stack + ".block." + std::to_string(l) + ".layer.";
      std::vector<std::string> attention = {p + "0.SelfAttention."};
      if (decoder) attention.push_back(p + "1.EncDecAttention.");
      for (std::size_t i = 0; i < attention.size(); ++i) {
        s[p + std::to_string(i) + ".layer_norm.weight"] = {kModel};
        for (const char* m : {"q", "k", "v"}) s[attention[i] + m + ".weight"] = {inner, kModel};
        s[attention[i] + "o.weight"] = {kModel, inner};
      }
      const std::string ff = p + std::to_string(attention.size()) + ".";
      s[ff + "layer_norm.weight"] = {kModel};
      if (gated) {
        s[ff + "DenseReluDense.wi_0.weight"] = {kFf, kModel};
        s[ff + "DenseReluDense.wi_1.weight"] = {kFf, kModel};
      } else {
        s[ff + "DenseReluDense.wi.weight"] = {kFf, kModel};
      }
      s[ff + "DenseReluDense.wo.weight"] = {kModel, kFf};
    }
  }
  return s;
}

}  // namespace attnscope::test::t5_fixture
