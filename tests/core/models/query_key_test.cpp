// SPDX-License-Identifier: GPL-3.0-or-later
// RunRequest::keepQueryKey: the queries and keys every family's scaledDotProduct reads, checked
// against the kept scores (Σ_d q_d·k_d · scale = score) for GPT-2, a Llama with rotary positions
// and grouped-query heads, and BERT; and the memory estimate that accounts for them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/toy_config.h"
#include "decoder_fixtures.h"
#include "expect_close.h"
#include "hf_test_folder.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the GPT-2 tests.
namespace query_key_test {

// The toy layer's variant, not gpt2_model_test.cpp's Variant (the same unity unit).
using ::attnscope::Variant;

std::shared_ptr<Model> open(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

RunRequest request(std::vector<std::string> texts) {
  RunRequest r;
  r.texts = std::move(texts);
  r.device = DeviceKind::Cpu;
  r.keepQueryKey = true;
  return r;
}

/// Checks shapes, padding and, for every unmasked cell of every head, Σ_d q_d·k_d · scale
/// against the kept score (computed in double here, from the kept vectors only).
void expectQueryKeyGiveScores(const AttentionResult& r, double scale, int headDim) {
  const AttentionGroup& g = r.group();
  const int L = g.layers(), B = g.batch(), H = g.heads(), Tq = g.queries(), Tk = g.keys();
  ASSERT_EQ(g.queryVectors.shape, (std::vector<int64_t>{L, B, H, Tq, headDim}));
  ASSERT_EQ(g.keyVectors.shape, (std::vector<int64_t>{L, B, H, Tk, headDim}));
  ASSERT_EQ(g.headDim(), headDim);
  ASSERT_EQ(g.queryKeyScales.size(), static_cast<std::size_t>(L));
  for (double s : g.queryKeyScales) EXPECT_NEAR(s, scale, 1e-12);
  ASSERT_FALSE(g.scores.empty());
  int checked = 0, masked = 0;
  double worst = 0;
  for (int l = 0; l < L; ++l)
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        const int nq = g.queryLengths[static_cast<std::size_t>(b)];
        const int nk = g.keyLengths[static_cast<std::size_t>(b)];
        const float* scores = g.scoreMatrix(l, b, h);
        for (int q = 0; q < Tq; ++q) {
          const float* qv = g.queryVector(l, b, h, q);
          if (q >= nq) {  // padded query rows are 0
            for (int d = 0; d < headDim; ++d) EXPECT_EQ(qv[d], 0.0f);
            continue;
          }
          for (int k = 0; k < nk; ++k) {
            const float score = scores[static_cast<std::size_t>(q) * Tk + k];
            if (!std::isfinite(score)) {
              ++masked;
              continue;
            }
            const float* kv = g.keyVector(l, b, h, k);
            // The score's float32 rounding follows its terms, not the sum (which can cancel):
            // the error is measured against scale · Σ_d |q_d·k_d| (expect_close.h).
            double dot = 0, terms = 0;
            for (int d = 0; d < headDim; ++d) {
              dot += double(qv[d]) * kv[d];
              terms += std::abs(double(qv[d]) * kv[d]);
            }
            worst = std::max(worst, test::closeError(score, dot * scale, terms * scale));
            ++checked;
          }
        }
        for (int k = nk; k < Tk; ++k) {  // padded keys are 0
          const float* kv = g.keyVector(l, b, h, k);
          for (int d = 0; d < headDim; ++d) EXPECT_EQ(kv[d], 0.0f);
        }
      }
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(checked, 20);
  ::testing::Test::RecordProperty("checked", checked);
  ::testing::Test::RecordProperty("masked", masked);
  ::testing::Test::RecordProperty("worst", std::to_string(worst));
}

/// The smallest memory limit (in bytes) the model accepts this request under: a black-box look
/// at the estimate, found by bisection on the ResourceLimit refusal.
uint64_t smallestLimit(const Model& model, RunRequest r) {
  uint64_t lo = 0, hi = 1ull << 34;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    r.limits.memoryLimitBytes = mid;
    try {
      model.run(r);
      hi = mid;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::ResourceLimit) throw;
      lo = mid;
    }
  }
  return hi;
}

TEST(QueryKey, Gpt2QueriesAndKeysGiveTheScores) {
  test::TempDir dir;
  test::TinyGpt2 spec;
  writeTinyGpt2(dir.path("gpt2"), spec);
  const auto model = open(dir.path("gpt2"));
  const AttentionResult r = model->run(request({"hello world, hello", "abc"}));
  expectQueryKeyGiveScores(r, 1.0 / std::sqrt(spec.embd / spec.heads), spec.embd / spec.heads);
  // Without the flag nothing is kept.
  RunRequest plain = request({"hello"});
  plain.keepQueryKey = false;
  const AttentionResult p = model->run(plain);
  EXPECT_TRUE(p.group().queryVectors.empty());
  EXPECT_TRUE(p.group().keyVectors.empty());
  EXPECT_TRUE(p.group().queryKeyScales.empty());
}

// The textbook's per-head layer runs scaledDotProduct once per head: its vectors are stacked.
TEST(QueryKey, ToyPerHeadAndFusedLayersKeepThemToo) {
  for (Variant variant : {Variant::PerHead, Variant::Fused}) {
    ToyConfig c;
    c.variant = variant;
    c.mask = MaskKind::Causal;
    c.dModel = 32;
    c.heads = 4;
    c.inputDim = 16;
    c.scale = ScaleKind::Embedding;  // 1/√32, not 1/√head_dim: the kept scale must say so
    const AttentionResult r = makeToyModel(c)->run(request({"the cat sat on the mat", "a dog"}));
    expectQueryKeyGiveScores(r, 1.0 / std::sqrt(32.0), 8);
  }
}

TEST(QueryKey, MemoryEstimateCoversTheKeptQueriesAndKeys) {
  test::TempDir dir;
  writeTinyGpt2(dir.path("gpt2"), test::TinyGpt2{});
  const auto model = open(dir.path("gpt2"));
  RunRequest with = request({"hello world, hello world, hello world"});
  RunRequest without = with;
  without.keepQueryKey = false;
  const AttentionResult r = model->run(with);
  const uint64_t kept = (r.group().queryVectors.data.size() + r.group().keyVectors.data.size()) * 4;
  const uint64_t more = smallestLimit(*model, with) - smallestLimit(*model, without);
  EXPECT_GE(more, kept);
  EXPECT_LE(more, 3 * kept);  // an estimate, not a blanket
}

nlohmann::json llamaConfig() {
  return {{"model_type", "llama"},      {"vocab_size", 301},
          {"hidden_size", 16},          {"intermediate_size", 24},
          {"num_hidden_layers", 2},     {"num_attention_heads", 4},
          {"num_key_value_heads", 2},   {"max_position_embeddings", 32},
          {"tie_word_embeddings", true}};
}

TEST(QueryKey, LlamaKeepsRotatedQueriesAndRepeatedKeys) {
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, llamaConfig(), test::llamaShapes()));
  const AttentionResult r = model->run(request({"the cat sat on the mat .", "a dog"}));
  // head_dim 4; the identity holds only for the q and k after rotary (scores are computed from
  // them), so it also proves the rotation is kept.
  expectQueryKeyGiveScores(r, 0.5, 4);
  // Grouped-query: query heads 0 and 1 read key/value head 0, so their keys are the same rows.
  const AttentionGroup& g = r.group();
  for (int k = 0; k < g.keys(); ++k)
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(g.keyVector(1, 0, 0, k)[d], g.keyVector(1, 0, 1, k)[d]);
      EXPECT_EQ(g.keyVector(1, 0, 2, k)[d], g.keyVector(1, 0, 3, k)[d]);
    }
  EXPECT_NE(g.keyVector(1, 0, 0, 1)[0], g.keyVector(1, 0, 2, 1)[0]);
}

TEST(QueryKey, BertQueriesAndKeysGiveTheScores) {
  constexpr int C = 32, I = 64, V = 1000;  // tests/data/tokenizers/wordpiece.json: 1000 ids
  const nlohmann::json config = {
      {"model_type", "bert"},          {"vocab_size", V},          {"hidden_size", C},
      {"num_hidden_layers", 2},        {"num_attention_heads", 4}, {"intermediate_size", I},
      {"max_position_embeddings", 40}, {"type_vocab_size", 2},     {"hidden_act", "gelu"},
      {"architectures", {"BertModel"}}};
  std::map<std::string, std::vector<int64_t>> s = {
      {"embeddings.word_embeddings.weight", {V, C}},
      {"embeddings.position_embeddings.weight", {40, C}},
      {"embeddings.token_type_embeddings.weight", {2, C}},
      {"embeddings.LayerNorm.weight", {C}},
      {"embeddings.LayerNorm.bias", {C}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"}) {
      s[p + m + ".weight"] = {C, C};
      s[p + m + ".bias"] = {C};
    }
    s[p + "intermediate.dense.weight"] = {I, C};
    s[p + "intermediate.dense.bias"] = {I};
    s[p + "output.dense.weight"] = {C, I};
    s[p + "output.dense.bias"] = {C};
    for (const char* n : {"attention.output.LayerNorm", "output.LayerNorm"}) {
      s[p + n + ".weight"] = {C};
      s[p + n + ".bias"] = {C};
    }
  }
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, config, s, 3, 0.3f, "wordpiece.json"));
  const AttentionResult r =
      model->run(request({"the teacher said the dog was happy yesterday.", "nobody knows"}));
  expectQueryKeyGiveScores(r, 1.0 / std::sqrt(8.0), 8);
}

}  // namespace query_key_test
}  // namespace attnscope
