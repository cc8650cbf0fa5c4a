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
#include "decoder_fixtures.h"
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
  const auto m = open(writeFolder(dir2, bloom, test::bloomShapes(1)));
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

/// Phi's and StableLM's layers: LayerNorm (weight and bias) names in both, q/k/v under self_attn.
std::map<std::string, std::vector<int64_t>> phiShapes(bool stablelm) {
  const std::string d = stablelm ? "o_proj" : "dense";
  std::map<std::string, std::vector<int64_t>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"lm_head.weight", {kVocab, kHidden}}};
  const std::string final = stablelm ? "model.norm." : "model.final_layernorm.";
  s[final + "weight"] = s[final + "bias"] = {kHidden};
  if (!stablelm) s["lm_head.bias"] = {kVocab};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = s[p + "input_layernorm.bias"] = {kHidden};
    for (const char* n : {"q_proj", "k_proj", "v_proj"}) {
      const int64_t out = std::string(n) == "q_proj" ? 16 : 8;  // 4 heads, 2 kv heads of 4
      s[p + "self_attn." + n + ".weight"] = {out, kHidden};
      s[p + "self_attn." + n + ".bias"] = {out};
    }
    s[p + "self_attn." + d + ".weight"] = {kHidden, 16};
    if (stablelm) {  // qk_layernorm: one gain per head, no bias
      for (int h = 0; h < 4; ++h)
        s[p + "self_attn.q_layernorm.norms." + std::to_string(h) + ".weight"] = {4};
      for (int h = 0; h < 2; ++h)
        s[p + "self_attn.k_layernorm.norms." + std::to_string(h) + ".weight"] = {4};
      s[p + "mlp.gate_proj.weight"] = s[p + "mlp.up_proj.weight"] = {kInner, kHidden};
      s[p + "mlp.down_proj.weight"] = {kHidden, kInner};
    } else {
      s[p + "self_attn.dense.bias"] = {kHidden};
      s[p + "mlp.fc1.weight"] = {kInner, kHidden};
      s[p + "mlp.fc1.bias"] = {kInner};
      s[p + "mlp.fc2.weight"] = {kHidden, kInner};
      s[p + "mlp.fc2.bias"] = {kHidden};
    }
  }
  return s;
}

TEST(DecoderFamilies, PhiAndStableLmOpenWithTheirNames) {
  const nlohmann::json base = {{"vocab_size", kVocab},          {"hidden_size", kHidden},
                               {"intermediate_size", kInner},   {"num_hidden_layers", kLayers},
                               {"num_attention_heads", 4},      {"num_key_value_heads", 2},
                               {"max_position_embeddings", 48}, {"partial_rotary_factor", 0.5}};
  for (const bool stablelm : {false, true}) {
    SCOPED_TRACE(stablelm ? "stablelm" : "phi");
    nlohmann::json c = base;
    c["model_type"] = stablelm ? "stablelm" : "phi";
    if (stablelm) {
      c["use_qkv_bias"] = true;
      c["qk_layernorm"] = true;
      c["use_parallel_residual"] = true;  // no post_attention_layernorm
    }
    test::TempDir dir;
    const auto model = open(writeFolder(dir, c, phiShapes(stablelm)));
    const ModelInfo i = model->info();
    EXPECT_EQ(i.kind, stablelm ? "stablelm" : "phi");
    EXPECT_EQ(i.layers, kLayers);
    EXPECT_EQ(i.heads, 4);
    EXPECT_EQ(i.kvHeads, 2);
    EXPECT_EQ(i.maxPositions, 48);
    EXPECT_TRUE(i.causal);
    std::map<std::string, std::vector<int64_t>> got;
    for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
    EXPECT_EQ(got.size(), phiShapes(stablelm).size());  // every tensor a parameter, no more
    if (stablelm) {
      EXPECT_EQ(got.at("layers.1.self_attn.k_layernorm.norms.1.weight"), (std::vector<int64_t>{4}));
      EXPECT_EQ(got.count("layers.0.post_attention_layernorm.weight"), 0u);
    } else {
      EXPECT_EQ(got.at("lm_head.bias"), (std::vector<int64_t>{kVocab}));
      EXPECT_EQ(got.at("layers.0.mlp.fc1.weight"), (std::vector<int64_t>{kInner, kHidden}));
      EXPECT_EQ(got.at("final_layernorm.bias"), (std::vector<int64_t>{kHidden}));
    }
    RunRequest r;
    r.texts = {"the cat sat ."};
    const AttentionResult result = model->run(r);
    EXPECT_EQ(result.nextToken.size(), 5u);
    std::map<std::string, std::vector<int64_t>> steps;
    for (const TraceStep& st : result.traces[0].steps) steps[st.name] = st.shape;
    EXPECT_EQ(steps.count("k_repeat"), 1u);
    EXPECT_EQ(steps.count(stablelm ? "k_layernorm" : "mlp_fc"), 1u);
    EXPECT_EQ(steps.count("residual"), 1u);  // both parallel here
  }
  // A missing per-head norm is named.
  test::TempDir dir;
  nlohmann::json c = base;
  c["model_type"] = "stablelm";
  c["use_qkv_bias"] = c["qk_layernorm"] = c["use_parallel_residual"] = true;
  auto shapes = phiShapes(true);
  shapes.erase("model.layers.1.self_attn.q_layernorm.norms.3.weight");
  test::expectError([&] { open(writeFolder(dir, c, shapes)); }, ErrorKind::Format,
                    "layers.1.self_attn.q_layernorm.norms.3.weight");
}

TEST(DecoderFamilies, OlmoHasNoNormTensorsAndTracesItsClip) {
  std::map<std::string, std::vector<int64_t>> shapes = llamaShapes(false);
  for (auto it = shapes.begin(); it != shapes.end();)  // OlmoLayerNorm: no weight, no bias
    it = it->first.find("norm") != std::string::npos ? shapes.erase(it) : std::next(it);
  nlohmann::json c = llamaConfig("olmo");
  c["clip_qkv"] = 0.5;
  test::TempDir dir;
  const auto model = open(writeFolder(dir, c, shapes));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "olmo");
  EXPECT_EQ(i.heads, 4);
  EXPECT_EQ(i.kvHeads, 2);
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.size(), shapes.size());
  EXPECT_EQ(got.at("layers.0.mlp.up_proj.weight"), (std::vector<int64_t>{kInner, kHidden}));
  RunRequest r;
  r.texts = {"the cat sat ."};
  const AttentionResult result = model->run(r);
  EXPECT_EQ(result.nextToken.size(), 5u);
  int clips = 0;
  for (const TraceStep& st : result.traces[0].steps) clips += st.kind == "clamp";
  EXPECT_EQ(clips, 3);  // q, k and v
  test::TempDir dir2;   // a norm weight is not an OLMo tensor: refused, named
  shapes["model.norm.weight"] = {kHidden};
  test::expectError([&] { open(writeFolder(dir2, c, shapes)); }, ErrorKind::Format,
                    "model.norm.weight");
}

/// GPT-J's tensors (transformer.h.{i}...) and OPT-350m's (decoder.*, no "model." prefix, project_in
/// and project_out around 16-wide layers, 8-wide word embeddings, post-norm: no final norm).
std::map<std::string, std::vector<int64_t>> gptjShapes() {
  std::map<std::string, std::vector<int64_t>> s = {{"transformer.wte.weight", {kVocab, kHidden}},
                                                   {"transformer.ln_f.weight", {kHidden}},
                                                   {"transformer.ln_f.bias", {kHidden}},
                                                   {"lm_head.weight", {kVocab, kHidden}},
                                                   {"lm_head.bias", {kVocab}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    s[p + "ln_1.weight"] = s[p + "ln_1.bias"] = {kHidden};
    for (const char* n : {"q_proj", "k_proj", "v_proj", "out_proj"})
      s[p + "attn." + n + ".weight"] = {kHidden, kHidden};
    s[p + "mlp.fc_in.weight"] = {kInner, kHidden};
    s[p + "mlp.fc_in.bias"] = {kInner};
    s[p + "mlp.fc_out.weight"] = {kHidden, kInner};
    s[p + "mlp.fc_out.bias"] = {kHidden};
  }
  return s;
}

std::map<std::string, std::vector<int64_t>> opt350mShapes() {
  std::map<std::string, std::vector<int64_t>> s = {
      {"decoder.embed_tokens.weight", {kVocab, 8}},
      {"decoder.embed_positions.weight", {32 + 2, kHidden}},
      {"decoder.project_in.weight", {kHidden, 8}},
      {"decoder.project_out.weight", {8, kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".";
    for (const char* n : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      s[p + "self_attn." + n + ".weight"] = {kHidden, kHidden};
      s[p + "self_attn." + n + ".bias"] = {kHidden};
    }
    for (const char* n : {"self_attn_layer_norm", "final_layer_norm"})
      s[p + n + ".weight"] = s[p + n + ".bias"] = {kHidden};
    s[p + "fc1.weight"] = {kInner, kHidden};
    s[p + "fc1.bias"] = {kInner};
    s[p + "fc2.weight"] = {kHidden, kInner};
    s[p + "fc2.bias"] = {kHidden};
  }
  return s;
}

TEST(DecoderFamilies, GptjAndOptOpenWithTheirNames) {
  const nlohmann::json gptj = {{"model_type", "gptj"}, {"vocab_size", kVocab}, {"n_embd", kHidden},
                               {"n_head", 2},          {"n_layer", kLayers},   {"n_inner", kInner},
                               {"n_positions", 32},    {"rotary_dim", 4}};
  const nlohmann::json opt = {{"model_type", "opt"},           {"vocab_size", kVocab},
                              {"hidden_size", kHidden},        {"ffn_dim", kInner},
                              {"num_hidden_layers", kLayers},  {"num_attention_heads", 4},
                              {"max_position_embeddings", 32}, {"do_layer_norm_before", false},
                              {"word_embed_proj_dim", 8}};
  for (const bool isOpt : {false, true}) {
    SCOPED_TRACE(isOpt ? "opt" : "gptj");
    auto shapes = isOpt ? opt350mShapes() : gptjShapes();
    const std::size_t parameters = shapes.size();
    if (!isOpt) shapes["transformer.h.0.attn.bias"] = {1, 1, 8, 8};  // a mask buffer: not loaded
    test::TempDir dir;
    const auto model = open(writeFolder(dir, isOpt ? opt : gptj, shapes));
    const ModelInfo i = model->info();
    EXPECT_EQ(i.kind, isOpt ? "opt" : "gptj");
    EXPECT_EQ(i.layers, kLayers);
    EXPECT_EQ(i.heads, isOpt ? 4 : 2);
    EXPECT_EQ(i.kvHeads, i.heads);
    EXPECT_EQ(i.maxPositions, 32);
    EXPECT_TRUE(i.causal);
    std::map<std::string, std::vector<int64_t>> got;
    for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
    EXPECT_EQ(got.size(), parameters);  // every tensor a parameter, no more
    if (isOpt) {
      EXPECT_EQ(got.at("decoder.embed_positions.weight"), (std::vector<int64_t>{34, kHidden}));
      EXPECT_EQ(got.at("decoder.project_out.weight"), (std::vector<int64_t>{8, kHidden}));
      EXPECT_EQ(got.count("decoder.final_layer_norm.weight"), 0u);  // post-norm: none
    } else {
      EXPECT_EQ(got.at("lm_head.bias"), (std::vector<int64_t>{kVocab}));
      EXPECT_EQ(got.at("h.1.attn.out_proj.weight"), (std::vector<int64_t>{kHidden, kHidden}));
      EXPECT_EQ(got.count("h.0.attn.q_proj.bias"), 0u);
    }
    RunRequest r;
    r.texts = {"the cat sat ."};
    const AttentionResult result = model->run(r);
    EXPECT_EQ(result.nextToken.size(), 5u);  // OPT's head is tied to its 8-wide embeddings
    std::map<std::string, std::vector<int64_t>> steps;
    for (const TraceStep& st : result.traces[0].steps) steps[st.name] = st.shape;
    EXPECT_EQ(steps.count(isOpt ? "q_scaled" : "q_rot"), 1u);
    EXPECT_EQ(steps.count(isOpt ? "residual_2" : "residual"), 1u);
  }
  // A pre-norm OPT needs its final LayerNorm: the missing tensor is named.
  test::TempDir dir;
  nlohmann::json c = opt;
  c["do_layer_norm_before"] = true;
  test::expectError([&] { open(writeFolder(dir, c, opt350mShapes())); }, ErrorKind::Format,
                    "decoder.final_layer_norm.weight");
}

TEST(DecoderFamilies, GptNeoWindowsItsLocalLayersOnly) {
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"transformer.wte.weight", {kVocab, kHidden}},
      {"transformer.wpe.weight", {32, kHidden}},
      {"transformer.ln_f.weight", {kHidden}},
      {"transformer.ln_f.bias", {kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    for (const char* n : {"ln_1", "ln_2"})
      shapes[p + n + ".weight"] = shapes[p + n + ".bias"] = {kHidden};
    for (const char* n : {"q_proj", "k_proj", "v_proj", "out_proj"})
      shapes[p + "attn.attention." + n + ".weight"] = {kHidden, kHidden};
    shapes[p + "attn.attention.out_proj.bias"] = {kHidden};
    shapes[p + "mlp.c_fc.weight"] = {kInner, kHidden};
    shapes[p + "mlp.c_fc.bias"] = {kInner};
    shapes[p + "mlp.c_proj.weight"] = {kHidden, kInner};
    shapes[p + "mlp.c_proj.bias"] = {kHidden};
  }
  const nlohmann::json c = {{"model_type", "gpt_neo"},
                            {"vocab_size", kVocab},
                            {"hidden_size", kHidden},
                            {"intermediate_size", kInner},
                            {"num_layers", kLayers},
                            {"num_heads", 4},
                            {"max_position_embeddings", 32},
                            {"window_size", 2},
                            {"attention_types", {{{"global", "local"}, 1}}}};
  test::TempDir dir;
  const auto model = open(writeFolder(dir, c, shapes));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "gpt_neo");
  EXPECT_EQ(i.heads, 4);
  EXPECT_EQ(i.slidingWindow, 0);  // not every layer is local
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.size(), shapes.size());
  EXPECT_EQ(got.at("h.0.attn.attention.out_proj.bias"), (std::vector<int64_t>{kHidden}));
  RunRequest r;
  r.texts = {"the cat sat on the mat ."};
  const AttentionResult result = model->run(r);
  EXPECT_EQ(result.nextToken.size(), 5u);  // tied to wte
  // Layer 0 (global) reaches the first token from the last; layer 1 (local, window 2) does not.
  const FloatTensor& att = result.group().attention;
  const std::vector<int64_t>& d = att.shape;  // [L, B, H, T, T]
  ASSERT_EQ(d.size(), 5u);
  const int64_t T = d[3];
  ASSERT_GT(T, 3);
  const auto at = [&](int64_t layer, int64_t q, int64_t k) {  // batch item 0, head 0
    return att.data[static_cast<std::size_t>(((layer * d[1] * d[2]) * T + q) * T + k)];
  };
  EXPECT_GT(at(0, T - 1, 0), 0.0f);
  EXPECT_EQ(at(1, T - 1, 0), 0.0f);
  EXPECT_GT(at(1, T - 1, T - 2), 0.0f);
}

}  // namespace
}  // namespace attnscope
