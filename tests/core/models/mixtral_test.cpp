// SPDX-License-Identifier: GPL-3.0-or-later
// Phi-3, OLMo 2, Mixtral and Qwen2-MoE through the public Model API: ModelInfo, the Hugging Face
// parameter names (fused q|k|v and gate|up, whole-projection q/k norms, experts, the shared
// expert), the router's choices in the result (AttentionResult::routerExperts / routerWeights)
// and the trace, dense layers, and broken configs.
// Their numbers are checked against PyTorch in tests/reference/phi3_olmo2_moe_reference.py.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the other decoder tests.
namespace mixtral_test {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
constexpr int kHidden = 16, kLayers = 2, kExperts = 4;

std::shared_ptr<Model> openFolder(const test::TempDir& dir, const nlohmann::json& config,
                                  const std::map<std::string, std::vector<int64_t>>& shapes) {
  ModelSpec spec;
  spec.source = test::writeHfFolder(dir, config, shapes, 5, 0.5f);
  return openModel(spec);
}

std::map<std::string, std::vector<int64_t>> parameterShapes(const Model& m) {
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : m.parameters()) got[p.name] = p.tensor.shape;
  return got;
}

/// Attention and norms of a Llama-style layer (4 heads of 4, 2 key/value heads).
void addAttention(std::map<std::string, std::vector<int64_t>>& s, const std::string& p) {
  s[p + "input_layernorm.weight"] = {kHidden};
  s[p + "post_attention_layernorm.weight"] = {kHidden};
  s[p + "self_attn.q_proj.weight"] = {16, kHidden};
  s[p + "self_attn.k_proj.weight"] = {8, kHidden};
  s[p + "self_attn.v_proj.weight"] = {8, kHidden};
  s[p + "self_attn.o_proj.weight"] = {kHidden, 16};
}

nlohmann::json config(const std::string& type) {
  return {
      {"model_type", type},       {"vocab_size", kVocab},          {"hidden_size", kHidden},
      {"intermediate_size", 12},  {"num_hidden_layers", kLayers},  {"num_attention_heads", 4},
      {"num_key_value_heads", 2}, {"max_position_embeddings", 32}, {"tie_word_embeddings", true}};
}

TEST(MixtralFamily, RouterChoicesReachTheResultAndTheTrace) {
  test::TempDir dir;
  nlohmann::json c = config("mixtral");
  c["num_local_experts"] = kExperts;
  c["num_experts_per_tok"] = 2;
  std::map<std::string, std::vector<int64_t>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"model.norm.weight", {kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    addAttention(s, p);
    s[p + "block_sparse_moe.gate.weight"] = {kExperts, kHidden};
    for (int e = 0; e < kExperts; ++e) {
      const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
      s[x + "w1.weight"] = {12, kHidden};
      s[x + "w3.weight"] = {12, kHidden};
      s[x + "w2.weight"] = {kHidden, 12};
    }
  }
  const auto model = openFolder(dir, c, s);
  EXPECT_EQ(model->info().kind, "mixtral");
  EXPECT_EQ(model->info().kvHeads, 2);
  const auto names = parameterShapes(*model);
  EXPECT_EQ(names.at("layers.1.block_sparse_moe.experts.3.w2.weight"),
            (std::vector<int64_t>{kHidden, 12}));
  EXPECT_EQ(names.size(), s.size());

  RunRequest r;
  r.texts = {"the cat sat on the mat .", "a dog"};
  const AttentionResult result = model->run(r);
  const std::vector<int> lengths = result.group().queryLengths;
  const int64_t T = result.group().queries();
  ASSERT_EQ(result.routerExperts.shape, (std::vector<int64_t>{kLayers, 2, T, 2}));
  ASSERT_EQ(result.routerWeights.shape, result.routerExperts.shape);
  for (int l = 0; l < kLayers; ++l) {
    for (int b = 0; b < 2; ++b) {
      for (int t = 0; t < T; ++t) {
        const std::size_t at = ((static_cast<std::size_t>(l) * 2 + b) * T + t) * 2;
        const float e0 = result.routerExperts.data[at], e1 = result.routerExperts.data[at + 1];
        const float w0 = result.routerWeights.data[at], w1 = result.routerWeights.data[at + 1];
        if (t >= lengths[static_cast<std::size_t>(b)]) {  // padding
          EXPECT_EQ(e0, -1.0f);
          EXPECT_EQ(w0 + w1, 0.0f);
          continue;
        }
        EXPECT_TRUE(e0 >= 0 && e0 < kExperts && e0 == std::floor(e0)) << e0;
        EXPECT_NE(e0, e1);
        EXPECT_GE(w0, w1);                  // the most probable first
        EXPECT_NEAR(w0 + w1, 1.0f, 1e-6f);  // Mixtral renormalises the top k
      }
    }
  }
  std::set<std::string> kinds;
  for (const TraceStep& step : result.traces[0].steps) {
    kinds.insert(step.kind);
    if (step.name == "router_topk") {
      EXPECT_EQ(step.shape, (std::vector<int64_t>{2, T, 2}));
    }
    if (step.name == "router_probs") {
      EXPECT_EQ(step.shape, (std::vector<int64_t>{2, T, kExperts}));
    }
  }
  EXPECT_TRUE(kinds.count("topk") && kinds.count("experts"));
  c["num_experts_per_tok"] = 5;
  test::TempDir dir2;
  test::expectError([&] { openFolder(dir2, c, s); }, ErrorKind::Format,
                    "\"num_experts_per_tok\" (5)");
}

TEST(MixtralFamily, Qwen2MoeSharedExpertAndDenseLayersByName) {
  // Three layers, the middle one dense (mlp_only_layers); the others route to 2 of 4 experts of
  // width 8 and add a shared expert of width 10. q/k/v have biases, o_proj none.
  nlohmann::json c = config("qwen2_moe");
  c["num_hidden_layers"] = 3;
  c["num_experts"] = kExperts;
  c["num_experts_per_tok"] = 2;
  c["moe_intermediate_size"] = 8;
  c["shared_expert_intermediate_size"] = 10;
  c["mlp_only_layers"] = {1};
  std::map<std::string, std::vector<int64_t>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"model.norm.weight", {kHidden}}};
  for (int l = 0; l < 3; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    addAttention(s, p);
    s[p + "self_attn.q_proj.bias"] = {16};
    s[p + "self_attn.k_proj.bias"] = {8};
    s[p + "self_attn.v_proj.bias"] = {8};
    if (l == 1) {
      s[p + "mlp.gate_proj.weight"] = {12, kHidden};
      s[p + "mlp.up_proj.weight"] = {12, kHidden};
      s[p + "mlp.down_proj.weight"] = {kHidden, 12};
      continue;
    }
    s[p + "mlp.gate.weight"] = {kExperts, kHidden};
    for (int e = 0; e < kExperts; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      s[x + "gate_proj.weight"] = {8, kHidden};
      s[x + "up_proj.weight"] = {8, kHidden};
      s[x + "down_proj.weight"] = {kHidden, 8};
    }
    s[p + "mlp.shared_expert.gate_proj.weight"] = {10, kHidden};
    s[p + "mlp.shared_expert.up_proj.weight"] = {10, kHidden};
    s[p + "mlp.shared_expert.down_proj.weight"] = {kHidden, 10};
    s[p + "mlp.shared_expert_gate.weight"] = {1, kHidden};
  }
  test::TempDir dir;
  const auto model = openFolder(dir, c, s);
  EXPECT_EQ(model->info().kind, "qwen2_moe");
  const auto names = parameterShapes(*model);
  EXPECT_EQ(names.at("layers.2.mlp.shared_expert_gate.weight"), (std::vector<int64_t>{1, kHidden}));
  EXPECT_EQ(names.size(), s.size());

  RunRequest r;
  r.texts = {"the cat sat on the mat ."};
  r.keepValueNorms = true;
  const AttentionResult result = model->run(r);
  EXPECT_FALSE(result.group().valueNorms.empty());
  const int64_t T = result.group().queries();
  ASSERT_EQ(result.routerExperts.shape, (std::vector<int64_t>{3, 1, T, 2}));
  for (int l = 0; l < 3; ++l) {
    for (int t = 0; t < T; ++t) {
      const std::size_t at = (static_cast<std::size_t>(l) * T + t) * 2;
      const float w = result.routerWeights.data[at] + result.routerWeights.data[at + 1];
      if (l == 1) {  // dense: no router
        EXPECT_EQ(result.routerExperts.data[at], -1.0f);
        continue;
      }
      EXPECT_GE(result.routerExperts.data[at], 0.0f);
      EXPECT_LT(w, 1.0f);  // norm_topk_prob false: two of four probabilities, not renormalised
    }
  }
  std::set<std::string> kinds;
  for (const TraceStep& step : result.traces[0].steps) kinds.insert(step.kind);
  EXPECT_TRUE(kinds.count("shared_expert") && kinds.count("topk"));
  // The dense layer read as sparse finds no router; use_sliding_window is refused; without
  // q/k/v biases (qkv_bias false) the stored ones are unexpected.
  nlohmann::json allSparse = c;
  allSparse.erase("mlp_only_layers");
  test::TempDir dir2;
  test::expectError([&] { openFolder(dir2, allSparse, s); }, ErrorKind::Format,
                    "layers.1.mlp.gate.weight");
  nlohmann::json windowed = c;
  windowed["use_sliding_window"] = true;
  test::TempDir dir3;
  test::expectError([&] { openFolder(dir3, windowed, s); }, ErrorKind::Format,
                    "use_sliding_window");
  nlohmann::json noBias = c;
  noBias["qkv_bias"] = false;
  test::TempDir dir4;
  test::expectError([&] { openFolder(dir4, noBias, s); }, ErrorKind::Format, "_proj.bias");
}

TEST(MixtralFamily, Phi3FusedProjectionsAndOlmo2WholeNormsByName) {
  test::TempDir dir;
  nlohmann::json c = config("phi3");
  c["sliding_window"] = 3;
  c["partial_rotary_factor"] = 0.5;
  std::map<std::string, std::vector<int64_t>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"model.norm.weight", {kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = {kHidden};
    s[p + "post_attention_layernorm.weight"] = {kHidden};
    s[p + "self_attn.qkv_proj.weight"] = {16 + 2 * 8, kHidden};  // q | k | v, 2 kv heads
    s[p + "self_attn.o_proj.weight"] = {kHidden, 16};
    s[p + "mlp.gate_up_proj.weight"] = {2 * 12, kHidden};
    s[p + "mlp.down_proj.weight"] = {kHidden, 12};
  }
  const auto phi3 = openFolder(dir, c, s);
  EXPECT_EQ(phi3->info().kind, "phi3");
  EXPECT_EQ(phi3->info().slidingWindow, 3);
  EXPECT_EQ(parameterShapes(*phi3).at("layers.0.self_attn.qkv_proj.weight"),
            (std::vector<int64_t>{32, kHidden}));
  RunRequest r;
  r.texts = {"the cat sat on the mat ."};
  r.keepValueNorms = true;
  const AttentionResult pr = phi3->run(r);
  EXPECT_TRUE(pr.routerExperts.empty());  // no experts, no routing
  EXPECT_FALSE(pr.group().valueNorms.empty());
  // The window hides key 0 from query 3 onwards.
  EXPECT_EQ(pr.group().headMatrix(0, 0, 0)[3 * pr.group().keys() + 0], 0.0f);
  // Half of each 4-wide head rotates: one frequency, so two factors are one too many.
  c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0, 2.0}}, {"long_factor", {1.0}}};
  test::TempDir bad;
  test::expectError([&] { openFolder(bad, c, s); }, ErrorKind::Format, "short_factor");

  test::TempDir dir2;
  std::map<std::string, std::vector<int64_t>> o = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"model.norm.weight", {kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    addAttention(o, p);
    o.erase(p + "input_layernorm.weight");    // OLMo 2 has none
    o[p + "self_attn.q_norm.weight"] = {16};  // the whole projection, not head_dim
    o[p + "self_attn.k_norm.weight"] = {8};
    o[p + "post_feedforward_layernorm.weight"] = {kHidden};
    o[p + "mlp.gate_proj.weight"] = {12, kHidden};
    o[p + "mlp.up_proj.weight"] = {12, kHidden};
    o[p + "mlp.down_proj.weight"] = {kHidden, 12};
  }
  const auto olmo2 = openFolder(dir2, config("olmo2"), o);
  EXPECT_EQ(olmo2->info().kind, "olmo2");
  EXPECT_EQ(parameterShapes(*olmo2).size(), o.size());
  EXPECT_EQ(olmo2->run(r).group().heads(), 4);
}

}  // namespace mixtral_test
}  // namespace attnscope
