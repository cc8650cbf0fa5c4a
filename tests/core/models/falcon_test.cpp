// SPDX-License-Identifier: GPL-3.0-or-later
// Falcon through the public Model API: ModelInfo (key/value heads of each query_key_value layout,
// no position limit with ALiBi), the Hugging Face parameter names of each layout's norms, and
// the trace. Its numbers are checked against PyTorch in tests/reference/falcon_cases.py.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other decoder tests.
namespace falcon_test {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int kHidden = 16, kLayers = 2, kFfn = 24;

struct Layout {
  const char* name;
  nlohmann::json config;  // beyond the sizes
  int kvHeads, qkvWidth;  // 4 heads of 4
  std::vector<std::string> norms;
  bool bias;
};

TEST(FalconFamily, EachLayoutOpensWithItsNames) {
  const std::vector<Layout> layouts = {
      {"falcon-7b multi-query, parallel",
       {{"multi_query", true}},
       1,
       kHidden + 2 * 4,
       {"input_layernorm"},
       false},
      {"falcon-40b grouped, ln_attn and ln_mlp",
       {{"new_decoder_architecture", true}, {"num_kv_heads", 2}},
       2,
       (4 + 2 * 2) * 4,
       {"ln_attn", "ln_mlp"},
       false},
      {"falcon-rw per head, ALiBi, sequential, biases",
       {{"multi_query", false}, {"alibi", true}, {"parallel_attn", false}, {"bias", true}},
       4,
       3 * kHidden,
       {"input_layernorm", "post_attention_layernorm"},
       true},
  };
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    nlohmann::json c = {{"model_type", "falcon"},       {"vocab_size", kVocab},
                        {"hidden_size", kHidden},       {"num_hidden_layers", kLayers},
                        {"num_attention_heads", 4},     {"ffn_hidden_size", kFfn},
                        {"max_position_embeddings", 32}};
    c.update(l.config);
    std::map<std::string, std::vector<int64_t>> shapes = {
        {"transformer.word_embeddings.weight", {kVocab, kHidden}},
        {"transformer.ln_f.weight", {kHidden}},
        {"transformer.ln_f.bias", {kHidden}}};
    for (int i = 0; i < kLayers; ++i) {
      const std::string p = "transformer.h." + std::to_string(i) + ".";
      for (const std::string& n : l.norms)
        shapes[p + n + ".weight"] = shapes[p + n + ".bias"] = {kHidden};
      const std::pair<std::string, std::vector<int64_t>> linears[] = {
          {"self_attention.query_key_value", {l.qkvWidth, kHidden}},
          {"self_attention.dense", {kHidden, kHidden}},
          {"mlp.dense_h_to_4h", {kFfn, kHidden}},
          {"mlp.dense_4h_to_h", {kHidden, kFfn}}};
      for (const auto& [n, shape] : linears) {
        shapes[p + n + ".weight"] = shape;
        if (l.bias) shapes[p + n + ".bias"] = {shape[0]};
      }
    }
    test::TempDir dir;
    ModelSpec spec;
    spec.source = test::writeHfFolder(dir, c, shapes, 5, 0.5f);
    const auto model = openModel(spec);
    const ModelInfo i = model->info();
    EXPECT_EQ(i.kind, "falcon");
    EXPECT_EQ(i.layers, kLayers);
    EXPECT_EQ(i.heads, 4);
    EXPECT_EQ(i.kvHeads, l.kvHeads);
    EXPECT_EQ(i.maxPositions, c.value("alibi", false) ? 0 : 32);  // ALiBi: no trained limit
    EXPECT_TRUE(i.causal);
    std::map<std::string, std::vector<int64_t>> got;
    for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
    EXPECT_EQ(got.size(), shapes.size());  // every tensor a parameter, the head tied
    EXPECT_EQ(got.at("h.1.self_attention.query_key_value.weight"),
              (std::vector<int64_t>{l.qkvWidth, kHidden}));
    EXPECT_EQ(got.count("h.0." + l.norms.back() + ".bias"), 1u);
    RunRequest r;
    r.texts = {"the cat sat ."};
    const AttentionResult result = model->run(r);
    EXPECT_EQ(result.nextToken.size(), 5u);  // the tied head
    std::map<std::string, std::vector<int64_t>> steps;
    for (const TraceStep& st : result.traces[0].steps) steps[st.name] = st.shape;
    EXPECT_EQ(steps.count(l.norms[0]), 1u);
    EXPECT_EQ(steps.count(l.kvHeads == 4 ? "attention" : "k_repeat"), 1u);
    EXPECT_EQ(steps.count("q_rot"), c.value("alibi", false) ? 0u : 1u);  // rotary, or ALiBi
    EXPECT_EQ(steps.count(c.value("parallel_attn", true) ? "residual" : "residual_2"), 1u);
  }
  // The grouped layout's width follows num_kv_heads: a 7B-sized query_key_value is named.
  test::TempDir dir;
  nlohmann::json c = {{"model_type", "falcon"},   {"vocab_size", kVocab},
                      {"hidden_size", kHidden},   {"num_hidden_layers", 1},
                      {"num_attention_heads", 4}, {"new_decoder_architecture", true},
                      {"num_kv_heads", 2}};
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"transformer.word_embeddings.weight", {kVocab, kHidden}},
      {"transformer.ln_f.weight", {kHidden}},
      {"transformer.ln_f.bias", {kHidden}},
      {"transformer.h.0.ln_attn.weight", {kHidden}},
      {"transformer.h.0.ln_attn.bias", {kHidden}},
      {"transformer.h.0.ln_mlp.weight", {kHidden}},
      {"transformer.h.0.ln_mlp.bias", {kHidden}},
      {"transformer.h.0.self_attention.query_key_value.weight", {kHidden + 8, kHidden}},
      {"transformer.h.0.self_attention.dense.weight", {kHidden, kHidden}},
      {"transformer.h.0.mlp.dense_h_to_4h.weight", {4 * kHidden, kHidden}},
      {"transformer.h.0.mlp.dense_4h_to_h.weight", {kHidden, 4 * kHidden}}};
  ModelSpec spec;
  spec.source = test::writeHfFolder(dir, c, shapes);
  test::expectError([&] { openModel(spec); }, ErrorKind::Format,
                    "h.0.self_attention.query_key_value.weight");
}

}  // namespace falcon_test
}  // namespace attnscope
