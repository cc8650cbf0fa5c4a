// SPDX-License-Identifier: GPL-3.0-or-later
// The decoder families through the public Model API: what ModelInfo tells the views (key/value
// heads, windows, positions), the Hugging Face parameter names, the memory guard and cancel.
// Their numbers are checked against PyTorch in tests/reference/decoder_reference.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/safetensors.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int kHidden = 16, kInner = 24, kLayers = 2;

std::string writeFolder(const test::TempDir& dir, const nlohmann::json& config,
                        const std::map<std::string, std::vector<int64_t>>& shapes) {
  return test::writeHfFolder(dir, config, shapes, 3, 0.3f);
}

std::shared_ptr<Model> open(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

nlohmann::json llamaConfig(const std::string& type) {
  return {{"model_type", type},           {"vocab_size", kVocab},
          {"hidden_size", kHidden},       {"intermediate_size", kInner},
          {"num_hidden_layers", kLayers}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2},     {"max_position_embeddings", 32},
          {"tie_word_embeddings", true}};
}

std::map<std::string, std::vector<int64_t>> llamaShapes(bool qwen2) {
  std::map<std::string, std::vector<int64_t>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"model.norm.weight", {kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = {kHidden};
    s[p + "post_attention_layernorm.weight"] = {kHidden};
    s[p + "self_attn.q_proj.weight"] = {16, kHidden};
    s[p + "self_attn.k_proj.weight"] = {8, kHidden};
    s[p + "self_attn.v_proj.weight"] = {8, kHidden};
    s[p + "self_attn.o_proj.weight"] = {kHidden, 16};
    if (qwen2) {
      s[p + "self_attn.q_proj.bias"] = {16};
      s[p + "self_attn.k_proj.bias"] = {8};
      s[p + "self_attn.v_proj.bias"] = {8};
    }
    s[p + "mlp.gate_proj.weight"] = {kInner, kHidden};
    s[p + "mlp.up_proj.weight"] = {kInner, kHidden};
    s[p + "mlp.down_proj.weight"] = {kHidden, kInner};
  }
  return s;
}

TEST(DecoderFamilies, LlamaInfoNamesTheSharedHeads) {
  test::TempDir dir;
  const auto model = open(writeFolder(dir, llamaConfig("llama"), llamaShapes(false)));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "llama");
  EXPECT_EQ(i.layers, kLayers);
  EXPECT_EQ(i.heads, 4);
  EXPECT_EQ(i.kvHeads, 2);
  EXPECT_EQ(i.kvHeadsOrHeads(), 2);
  EXPECT_TRUE(i.causal);
  EXPECT_EQ(i.maxPositions, 32);
  EXPECT_EQ(i.slidingWindow, 0);
  EXPECT_GT(i.parameterBytes, 0u);
  // Every parameter under its Hugging Face name (no "model." prefix: the module's own names).
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.at("layers.1.self_attn.k_proj.weight"), (std::vector<int64_t>{8, kHidden}));
  EXPECT_EQ(got.at("embed_tokens.weight"), (std::vector<int64_t>{kVocab, kHidden}));
  EXPECT_EQ(got.count("lm_head.weight"), 0u);  // tied: one matrix
  EXPECT_EQ(got.size(), llamaShapes(false).size());

  RunRequest r;
  r.texts = {"the cat sat on the mat .", "a dog"};
  const AttentionResult result = model->run(r);
  EXPECT_EQ(result.group().heads(), 4);  // every query head is shown
  EXPECT_EQ(result.nextToken.size(), 5u);
  ASSERT_EQ(result.traces.size(), static_cast<std::size_t>(kLayers));
  bool repeated = false;
  for (const TraceStep& s : result.traces[0].steps) {
    if (s.kind == "repeat_kv") {
      repeated = true;
      EXPECT_EQ(s.shape[1], 4);  // 2 key/value heads repeated for 4 query heads
    }
  }
  EXPECT_TRUE(repeated);
}

TEST(DecoderFamilies, MistralWindowAndQwen2BiasesReachTheInfo) {
  test::TempDir dir;
  nlohmann::json c = llamaConfig("mistral");
  c["sliding_window"] = 3;
  EXPECT_EQ(open(writeFolder(dir, c, llamaShapes(false)))->info().slidingWindow, 3);
  test::TempDir dir2;
  const auto qwen = open(writeFolder(dir2, llamaConfig("qwen2"), llamaShapes(true)));
  EXPECT_EQ(qwen->info().kind, "qwen2");
  test::TempDir dir3;  // Qwen2 without its q/k/v biases is refused, naming the first missing one
  test::expectError([&] { open(writeFolder(dir3, llamaConfig("qwen2"), llamaShapes(false))); },
                    ErrorKind::Format, "missing tensor 'model.layers.0.self_attn.q_proj.bias'");
}

/// Gemma's layout: one key/value head, head_dim 8 (4 heads × 8 = 32 ≠ hidden 16), no lm_head
/// (tied by default).
std::map<std::string, std::vector<int64_t>> gemmaShapes(int64_t headDim) {
  std::map<std::string, std::vector<int64_t>> s = llamaShapes(false);
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "self_attn.q_proj.weight"] = {4 * headDim, kHidden};
    s[p + "self_attn.k_proj.weight"] = {headDim, kHidden};
    s[p + "self_attn.v_proj.weight"] = {headDim, kHidden};
    s[p + "self_attn.o_proj.weight"] = {kHidden, 4 * headDim};
  }
  return s;
}

TEST(DecoderFamilies, GemmaIsMultiQueryWithItsOwnHeadDim) {
  nlohmann::json c = llamaConfig("gemma");
  c.erase("tie_word_embeddings");  // GemmaConfig ties by default
  c["num_key_value_heads"] = 1;
  c["head_dim"] = 8;
  c["hidden_act"] = "gelu";
  test::TempDir dir;
  const auto model = open(writeFolder(dir, c, gemmaShapes(8)));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "gemma");
  EXPECT_EQ(i.heads, 4);
  EXPECT_EQ(i.kvHeads, 1);
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.at("layers.0.self_attn.q_proj.weight"), (std::vector<int64_t>{32, kHidden}));
  EXPECT_EQ(got.count("lm_head.weight"), 0u);
  RunRequest r;
  r.texts = {"the cat sat on the mat ."};
  const AttentionResult result = model->run(r);
  EXPECT_EQ(result.group().heads(), 4);
  EXPECT_EQ(result.nextToken.size(), 5u);  // the tied head predicts
  // Weights shaped for head_dim = hidden / heads (4) are refused, naming the tensor.
  test::TempDir dir2;
  test::expectError([&] { open(writeFolder(dir2, c, gemmaShapes(4))); }, ErrorKind::Format,
                    "model.layers.0.self_attn.");
}

TEST(DecoderFamilies, MemoryGuardRefusesBeforeRunningAndCancelStops) {
  test::TempDir dir;
  const auto model = open(writeFolder(dir, llamaConfig("llama"), llamaShapes(false)));
  RunRequest r;
  r.texts = {"the cat sat on the mat ."};
  r.limits.memoryLimitBytes = 1024;
  test::expectError([&] { model->run(r); }, ErrorKind::ResourceLimit, "memory limit");
  r.limits = RunLimits{};
  const std::atomic<bool> cancel{true};
  r.cancel = &cancel;
  test::expectError([&] { model->run(r); }, ErrorKind::Cancelled, "cancelled");
  // Progress: every layer once, in order, out of the model's layers.
  r.cancel = nullptr;
  std::vector<std::pair<int, int>> calls;
  r.progress = [&](int done, int total) { calls.emplace_back(done, total); };
  model->run(r);
  const int layers = model->info().layers;
  ASSERT_EQ(static_cast<int>(calls.size()), layers);
  for (int l = 0; l < layers; ++l)
    EXPECT_EQ(calls[static_cast<std::size_t>(l)], std::make_pair(l + 1, layers));
}

TEST(DecoderFamilies, NeoxAndBloomShareNoHeads) {
  test::TempDir dir;
  const nlohmann::json neox = {{"model_type", "gpt_neox"},      {"vocab_size", kVocab},
                               {"hidden_size", kHidden},        {"intermediate_size", kInner},
                               {"num_hidden_layers", 1},        {"num_attention_heads", 2},
                               {"max_position_embeddings", 32}, {"rotary_pct", 0.5}};
  std::map<std::string, std::vector<int64_t>> s = {{"gpt_neox.embed_in.weight", {kVocab, kHidden}},
                                                   {"gpt_neox.final_layer_norm.weight", {kHidden}},
                                                   {"gpt_neox.final_layer_norm.bias", {kHidden}},
                                                   {"embed_out.weight", {kVocab, kHidden}}};
  const std::string p = "gpt_neox.layers.0.";
  for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
    s[p + n + ".weight"] = {kHidden};
    s[p + n + ".bias"] = {kHidden};
  }
  s[p + "attention.query_key_value.weight"] = {3 * kHidden, kHidden};
  s[p + "attention.query_key_value.bias"] = {3 * kHidden};
  s[p + "attention.dense.weight"] = {kHidden, kHidden};
  s[p + "attention.dense.bias"] = {kHidden};
  s[p + "mlp.dense_h_to_4h.weight"] = {kInner, kHidden};
  s[p + "mlp.dense_h_to_4h.bias"] = {kInner};
  s[p + "mlp.dense_4h_to_h.weight"] = {kHidden, kInner};
  s[p + "mlp.dense_4h_to_h.bias"] = {kHidden};
  const ModelInfo n = open(writeFolder(dir, neox, s))->info();
  EXPECT_EQ(n.kind, "gpt_neox");
  EXPECT_EQ(n.heads, 2);
  EXPECT_EQ(n.kvHeads, 2);

  test::TempDir dir2;
  const nlohmann::json bloom = {{"model_type", "bloom"},
                                {"vocab_size", kVocab},
                                {"hidden_size", 12},
                                {"n_layer", 1},
                                {"n_head", 3}};
  std::map<std::string, std::vector<int64_t>> b = {{"word_embeddings.weight", {kVocab, 12}},
                                                   {"word_embeddings_layernorm.weight", {12}},
                                                   {"word_embeddings_layernorm.bias", {12}},
                                                   {"ln_f.weight", {12}},
                                                   {"ln_f.bias", {12}}};
  for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
    b[std::string("h.0.") + n + ".weight"] = {12};
    b[std::string("h.0.") + n + ".bias"] = {12};
  }
  b["h.0.self_attention.query_key_value.weight"] = {36, 12};
  b["h.0.self_attention.query_key_value.bias"] = {36};
  b["h.0.self_attention.dense.weight"] = {12, 12};
  b["h.0.self_attention.dense.bias"] = {12};
  b["h.0.mlp.dense_h_to_4h.weight"] = {48, 12};
  b["h.0.mlp.dense_h_to_4h.bias"] = {48};
  b["h.0.mlp.dense_4h_to_h.weight"] = {12, 48};
  b["h.0.mlp.dense_4h_to_h.bias"] = {12};
  const auto m = open(writeFolder(dir2, bloom, b));
  EXPECT_EQ(m->info().kvHeads, 3);
  EXPECT_EQ(m->info().maxPositions, 0);  // ALiBi: no trained context length
  RunRequest r;
  r.texts = {"the cat sat ."};
  bool biased = false;
  // Keep the result: a range-for over m->run(r).traces[0] would read a destroyed temporary
  // (operator[] does not extend its lifetime; ASan caught it).
  const AttentionResult result = m->run(r);
  for (const TraceStep& st : result.traces[0].steps) biased |= st.kind == "position_bias";
  EXPECT_TRUE(biased);
}

}  // namespace
}  // namespace attnscope
