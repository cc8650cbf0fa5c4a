// SPDX-License-Identifier: GPL-3.0-or-later
// RunRequest::attentionOnDemand (issue 33): the run stores no attention, and every cell that
// AttentionGroup::source recomputes equals the stored attention of the same run within 1e-6, for
// the families' different scores: GPT-2 with padding, a Mistral (rotary, grouped-query, sliding
// window), BERT (bidirectional, padded keys), Bloom (ALiBi bias), Gemma 2 (soft-capped scores,
// alternating windows) and T5 (relative position bias, three groups); tiles anywhere in the
// matrix, the memory estimate that no longer counts T × T, and the measures read on demand
// (long-range profile, thumbnails, rollout, induction scores).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "attnscope/attention_rollout.h"
#include "attnscope/error.h"
#include "attnscope/head_statistics.h"
#include "attnscope/induction_scores.h"
#include "attnscope/long_range.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "decoder_fixtures.h"
#include "hf_test_folder.h"
#include "t5_fixtures.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
// Named, not anonymous: unity builds may compile this file with the other model tests.
namespace on_demand_test {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json

std::shared_ptr<Model> open(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

RunRequest request(std::vector<std::string> texts, bool onDemand) {
  RunRequest r;
  r.texts = std::move(texts);
  r.device = DeviceKind::Cpu;
  r.keepScores = false;
  r.attentionOnDemand = onDemand;
  return r;
}

/// The largest difference between on-demand and stored weights over every cell of every group,
/// layer, item and head, read as whole matrices and as an off-centre tile; also that nothing
/// T × T was stored on demand.
///
/// Both sides round the score q·k·scale (+ bias) in float32, with other summation orders, so a
/// weight p differs by about p·ε·(Σ_d |q_d·k_d|·scale + |score|): the difference is measured
/// against 1 + p·that magnitude (the same rule as expect_close.h), from the run's own kept q and
/// k and scores. For moderate scores that is the absolute difference; a wrong normaliser, mask or
/// bias moves a weight by about itself and fails by orders of magnitude.
double worstDifference(const Model& model, const std::vector<std::string>& texts,
                       int* cells = nullptr, std::optional<std::string> target = {}) {
  RunRequest storedRequest = request(texts, false);
  storedRequest.keepScores = true;
  storedRequest.keepQueryKey = true;
  storedRequest.target = target;
  RunRequest lazyRequest = request(texts, true);
  lazyRequest.target = target;
  const AttentionResult stored = model.run(storedRequest);
  const AttentionResult lazy = model.run(lazyRequest);
  EXPECT_EQ(stored.groups.size(), lazy.groups.size());
  double worst = 0;
  int counted = 0;
  for (std::size_t i = 0; i < stored.groups.size() && i < lazy.groups.size(); ++i) {
    const AttentionGroup& s = stored.groups[i];
    const AttentionGroup& d = lazy.groups[i];
    EXPECT_EQ(s.name, d.name);
    EXPECT_TRUE(d.attention.empty());
    EXPECT_TRUE(d.onDemand());
    EXPECT_TRUE(d.scores.empty());
    EXPECT_EQ(d.layers(), s.layers());
    EXPECT_EQ(d.batch(), s.batch());
    EXPECT_EQ(d.heads(), s.heads());
    EXPECT_EQ(d.queries(), s.queries());
    EXPECT_EQ(d.keys(), s.keys());
    const int Tq = s.queries(), Tk = s.keys();
    std::vector<float> m(static_cast<std::size_t>(Tq) * Tk);
    for (int l = 0; l < s.layers(); ++l)
      for (int b = 0; b < s.batch(); ++b)
        for (int h = 0; h < s.heads(); ++h) {
          const float* want = s.headMatrix(l, b, h);
          const float* score = s.scoreMatrix(l, b, h);
          const auto error = [&](int q, int k, float got) {
            const std::size_t c = static_cast<std::size_t>(q) * Tk + k;
            double magnitude = std::isfinite(score[c]) ? std::abs(double(score[c])) : 0.0;
            if (s.headDim() > 0 && q < s.queries() && k < s.keys()) {
              const float* qv = s.queryVector(l, b, h, q);
              const float* kv = s.keyVector(l, b, h, k);
              double terms = 0;
              for (int x = 0; x < s.headDim(); ++x) terms += std::abs(double(qv[x]) * kv[x]);
              magnitude += terms * s.queryKeyScales[static_cast<std::size_t>(l)];
            }
            return std::abs(double(got) - want[c]) / (1.0 + want[c] * magnitude);
          };
          d.source->tile(d.slotOf(l), b, h, 0, Tq, 0, Tk, m.data());
          for (int q = 0; q < Tq; ++q)
            for (int k = 0; k < Tk; ++k) {
              worst = std::max(worst, error(q, k, m[static_cast<std::size_t>(q) * Tk + k]));
              ++counted;
            }
          // A tile away from the origin reads the same cells.
          const int q0 = Tq / 3, q1 = Tq - 1, k0 = Tk / 4, k1 = std::max(k0 + 1, Tk - 2);
          std::vector<float> t(static_cast<std::size_t>(q1 - q0) * (k1 - k0));
          d.source->tile(d.slotOf(l), b, h, q0, q1, k0, k1, t.data());
          for (int q = q0; q < q1; ++q)
            for (int k = k0; k < k1; ++k)
              worst = std::max(
                  worst, error(q, k, t[static_cast<std::size_t>(q - q0) * (k1 - k0) + (k - k0)]));
        }
  }
  if (cells) *cells = counted;
  return worst;
}

TEST(OnDemandAttention, Gpt2WithPaddingEqualsTheStoredAttention) {
  test::TempDir dir;
  writeTinyGpt2(dir.path("gpt2"), test::TinyGpt2{});
  const auto model = open(dir.path("gpt2"));
  int cells = 0;
  EXPECT_LT(worstDifference(*model, {"hello world, hello world", "abc"}, &cells), 1e-6);
  EXPECT_GT(cells, 1000);
}

nlohmann::json mistralConfig() {
  return {{"model_type", "mistral"},    {"vocab_size", kVocab},          {"hidden_size", 16},
          {"intermediate_size", 24},    {"num_hidden_layers", 2},        {"num_attention_heads", 4},
          {"num_key_value_heads", 2},   {"max_position_embeddings", 64}, {"sliding_window", 3},
          {"tie_word_embeddings", true}};
}

// Large weights (N(0, 1)): peaked attention, so a wrong normaliser or a missed window shows.
TEST(OnDemandAttention, MistralRotaryGroupedQueryAndWindowEqualTheStoredAttention) {
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, mistralConfig(), test::llamaShapes(), 5, 1.0f));
  EXPECT_LT(worstDifference(*model, {"the cat sat on the mat and the dog sat .", "a dog"}), 1e-6);
}

TEST(OnDemandAttention, BloomAlibiEqualsTheStoredAttention) {
  test::TempDir dir;
  const nlohmann::json bloom = {{"model_type", "bloom"},
                                {"vocab_size", kVocab},
                                {"hidden_size", 12},
                                {"n_layer", 2},
                                {"n_head", 3}};
  const auto model = open(test::writeHfFolder(dir, bloom, test::bloomShapes(2), 7, 1.0f));
  EXPECT_LT(worstDifference(*model, {"the cat sat on the mat .", "the dog"}), 1e-6);
}

TEST(OnDemandAttention, Gemma2SoftcapAndWindowsEqualTheStoredAttention) {
  constexpr int kHidden = 16, kInner = 24, kHeadDim = 8, kLayers = 3;
  nlohmann::json c = {{"model_type", "gemma2"},        {"vocab_size", kVocab},
                      {"hidden_size", kHidden},        {"intermediate_size", kInner},
                      {"num_hidden_layers", kLayers},  {"num_attention_heads", 4},
                      {"num_key_value_heads", 2},      {"head_dim", kHeadDim},
                      {"max_position_embeddings", 64}, {"sliding_window", 3},
                      {"attn_logit_softcapping", 2.0}, {"query_pre_attn_scalar", 4}};
  test::TempDir dir;
  const auto model =
      open(test::writeHfFolder(dir, c, test::gemmaShapes("model.", kLayers, false), 3, 1.0f));
  EXPECT_LT(worstDifference(*model, {"the cat sat on the mat and the dog ."}), 1e-6);
}

TEST(OnDemandAttention, BertBidirectionalWithPaddedKeysEqualsTheStoredAttention) {
  const nlohmann::json config = {
      {"model_type", "bert"},          {"vocab_size", kVocab},     {"hidden_size", 16},
      {"num_hidden_layers", 2},        {"num_attention_heads", 4}, {"intermediate_size", 24},
      {"max_position_embeddings", 32}, {"type_vocab_size", 2}};
  std::map<std::string, std::vector<int64_t>> s = {
      {"embeddings.word_embeddings.weight", {kVocab, 16}},
      {"embeddings.position_embeddings.weight", {32, 16}},
      {"embeddings.token_type_embeddings.weight", {2, 16}},
      {"embeddings.LayerNorm.weight", {16}},
      {"embeddings.LayerNorm.bias", {16}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* n : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"}) {
      s[p + n + ".weight"] = {16, 16};
      s[p + n + ".bias"] = {16};
    }
    s[p + "attention.output.LayerNorm.weight"] = {16};
    s[p + "attention.output.LayerNorm.bias"] = {16};
    s[p + "intermediate.dense.weight"] = {24, 16};
    s[p + "intermediate.dense.bias"] = {24};
    s[p + "output.dense.weight"] = {16, 24};
    s[p + "output.dense.bias"] = {16};
    s[p + "output.LayerNorm.weight"] = {16};
    s[p + "output.LayerNorm.bias"] = {16};
  }
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, config, s, 11, 1.0f));
  EXPECT_LT(worstDifference(*model, {"the cat sat on the mat .", "a dog"}), 1e-6);
}

TEST(OnDemandAttention, T5RelativeBiasInItsThreeGroupsEqualsTheStoredAttention) {
  // The encoder's bidirectional and the decoder's causal relative-position biases (buckets and
  // their clamping at distance 16 reached by the 20-token text), the cross-attention without one,
  // a padded batch item.
  namespace t5 = test::t5_fixture;
  test::TempDir dir;
  const auto model =
      open(test::writeHfFolder(dir, t5::t5Config(), t5::t5Shapes(true, false), 5, 1.0f));
  int cells = 0;
  EXPECT_LT(worstDifference(*model,
                            {"the cat sat on the mat and the dog sat on the cat and the mat sat "
                             "on the dog .",
                             "a dog"},
                            &cells, std::string("the dog sat on the mat")),
            1e-6);
  EXPECT_GT(cells, 2000);
}

TEST(OnDemandAttention, TilesOutsideTheMatrixAreRefused) {
  test::TempDir dir;
  writeTinyGpt2(dir.path("gpt2"), test::TinyGpt2{});
  const AttentionResult r = open(dir.path("gpt2"))->run(request({"hello world"}, true));
  const AttentionGroup& g = r.group();
  std::vector<float> out(1024);
  const int T = g.queries();
  for (const auto& bad : std::vector<std::array<int, 7>>{{0, 0, 0, 0, T + 1, 0, 1},
                                                         {0, 0, 0, 2, 1, 0, 1},
                                                         {g.layers(), 0, 0, 0, 1, 0, 1},
                                                         {0, 0, g.heads(), 0, 1, 0, 1},
                                                         {0, 1, 0, 0, 1, 0, 1}}) {
    try {
      g.source->tile(bad[0], bad[1], bad[2], bad[3], bad[4], bad[5], bad[6], out.data());
      ADD_FAILURE() << "tile accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    }
  }
}

// What a long input is for: the estimate counts the kept queries and keys, not L·H·T², so a
// length whose stored attention is over the limit runs on demand, and what is kept is about
// what the estimate said.
TEST(OnDemandAttention, TheEstimateCountsWhatIsKeptInsteadOfTheSquare) {
  test::TempDir dir;
  test::TinyGpt2 spec;
  spec.positions = 256;
  writeTinyGpt2(dir.path("gpt2"), spec);
  const auto model = open(dir.path("gpt2"));
  std::string text;
  for (int i = 0; i < 60; ++i) text += "hello world ";
  const MemoryEstimate stored = model->estimate(request({text}, false));
  const MemoryEstimate lazy = model->estimate(request({text}, true));
  EXPECT_EQ(lazy.scores, 0u);
  EXPECT_LT(lazy.attention * 4, stored.attention);
  const AttentionResult r = model->run(request({text}, true));
  const uint64_t kept = r.group().source->bytes();
  EXPECT_GE(kept, lazy.attention / 2);
  EXPECT_LE(kept, lazy.attention * 2);
  // Refused as stored, accepted on demand.
  RunRequest tight = request({text}, false);
  tight.limits.memoryLimitBytes = stored.total - 1;
  EXPECT_THROW(model->run(tight), Error);
  tight.attentionOnDemand = true;
  ASSERT_LT(lazy.total, tight.limits.memoryLimitBytes);
  EXPECT_NO_THROW(model->run(tight));
}

/// A one-layer, one-head group of T tokens whose query q puts all its weight on key to(q).
AttentionGroup oneHotGroup(int T, int (*to)(int)) {
  AttentionGroup g;
  g.attention = FloatTensor({1, 1, 1, T, T});
  for (int q = 0; q < T; ++q) g.attention.data[static_cast<std::size_t>(q * T + to(q))] = 1.0f;
  g.queryLengths = {T};
  g.keyLengths = {T};
  return g;
}

// Hand-made heads with known answers: the diagonal is all bucket 0, the previous token bucket 1
// (but query 0, on itself), a sink all on key 0.
TEST(LongRange, DistanceBucketsAndSinkOfHandMadeHeads) {
  const int T = 40;
  const LongRangeProfile self = longRangeProfile(oneHotGroup(T, [](int q) { return q; }), 0, 0, 0);
  ASSERT_EQ(self.distanceMass.size(), 6u);  // distances up to 39: buckets 0..5
  EXPECT_DOUBLE_EQ(self.distanceMass[0], 1.0);
  EXPECT_DOUBLE_EQ(self.sinkShare, 4.0 / T);  // queries 0..3 look at themselves, in the sink
  const LongRangeProfile previous =
      longRangeProfile(oneHotGroup(T, [](int q) { return q > 0 ? q - 1 : 0; }), 0, 0, 0);
  EXPECT_DOUBLE_EQ(previous.distanceMass[0], 1.0 / T);
  EXPECT_DOUBLE_EQ(previous.distanceMass[1], (T - 1.0) / T);
  const LongRangeProfile sink = longRangeProfile(oneHotGroup(T, [](int) { return 0; }), 0, 0, 0, 1);
  EXPECT_DOUBLE_EQ(sink.sinkShare, 1.0);
  // Query q at distance q: bucket ⌊log2(q + 1)⌋ holds the queries 2^b − 1 .. 2^(b+1) − 2.
  for (int b = 0; b < 6; ++b) {
    const int from = (1 << b) - 1, to = std::min(T, (1 << (b + 1)) - 1);
    EXPECT_DOUBLE_EQ(sink.distanceMass[static_cast<std::size_t>(b)], double(to - from) / T) << b;
  }
  EXPECT_DOUBLE_EQ(sink.statistics.firstToken, 1.0);
}

// On demand, the profile and the thumbnails equal what the stored matrix gives: statistics as
// headStatistics computes them, and max-pooling done here over the stored matrix.
TEST(LongRange, OnDemandProfileAndThumbnailEqualTheStoredOnes) {
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, mistralConfig(), test::llamaShapes(), 5, 1.0f));
  const std::vector<std::string> texts = {"the cat sat on the mat and the dog sat on the cat .",
                                          "a dog"};
  const AttentionResult stored = model->run(request(texts, false));
  const AttentionResult lazy = model->run(request(texts, true));
  const AttentionGroup& s = stored.group();
  const AttentionGroup& d = lazy.group();
  double worst = 0;
  for (int l = 0; l < s.layers(); ++l)
    for (int b = 0; b < s.batch(); ++b)
      for (int h = 0; h < s.heads(); ++h) {
        const HeadStatistics want = headStatistics(headView(s, l, b, h));
        const LongRangeProfile got = longRangeProfile(d, l, b, h, 2);
        const LongRangeProfile same = longRangeProfile(s, l, b, h, 2);
        for (const auto& [x, y] : std::vector<std::pair<double, double>>{
                 {got.statistics.entropy, want.entropy},
                 {got.statistics.meanDistance, want.meanDistance},
                 {got.statistics.maxWeight, want.maxWeight},
                 {got.statistics.previousToken, want.previousToken},
                 {got.statistics.diagonal, want.diagonal},
                 {got.statistics.firstToken, want.firstToken},
                 {got.sinkShare, same.sinkShare}})
          worst = std::max(worst, std::abs(x - y));
        ASSERT_EQ(got.distanceMass.size(), same.distanceMass.size());
        double total = 0;
        for (std::size_t i = 0; i < got.distanceMass.size(); ++i) {
          worst = std::max(worst, std::abs(got.distanceMass[i] - same.distanceMass[i]));
          total += got.distanceMass[i];
        }
        EXPECT_NEAR(total, 1.0, 1e-5);
        // Thumbnails 3 x 5 of the real [nq, nk] matrix, pooled here from the stored one.
        const int nq = s.queryLengths[static_cast<std::size_t>(b)];
        const int nk = s.keyLengths[static_cast<std::size_t>(b)];
        const std::vector<float> thumb = pooledAttention(d, l, b, h, 3, 5);
        const int R = std::min(3, nq), C = std::min(5, nk);
        ASSERT_EQ(thumb.size(), static_cast<std::size_t>(R * C));
        const float* m = s.headMatrix(l, b, h);
        for (int r = 0; r < R; ++r)
          for (int c = 0; c < C; ++c) {
            float peak = 0;
            for (int q = r * nq / R; q < (r + 1) * nq / R; ++q)
              for (int k = c * nk / C; k < (c + 1) * nk / C; ++k)
                peak = std::max(peak, m[q * s.keys() + k]);
            worst = std::max(worst,
                             double(std::abs(thumb[static_cast<std::size_t>(r * C + c)] - peak)));
          }
      }
  // Cells agree within 1.5e-6 here (peaked: scores to about 40, see worstDifference); a
  // statistic sums a row of them.
  EXPECT_LT(worst, 1e-5);
}

// Rollout and the induction scores read the rows on demand as they read the stored ones: equal
// within the cells' own agreement, and the on-demand side never sees a null matrix (it once read
// the empty stored tensor as a head).
TEST(LongRange, OnDemandRolloutAndInductionScoresEqualTheStoredOnes) {
  test::TempDir dir;
  const auto model = open(test::writeHfFolder(dir, mistralConfig(), test::llamaShapes(), 5, 1.0f));
  const std::vector<std::string> texts = {"the cat sat on the mat and the cat sat on the mat .",
                                          "a dog"};
  const AttentionResult stored = model->run(request(texts, false));
  const AttentionResult lazy = model->run(request(texts, true));
  for (int b = 0; b < 2; ++b) {
    const AttentionRollout want = attentionRollout(stored.group(), b);
    const AttentionRollout got = attentionRollout(lazy.group(), b);
    ASSERT_EQ(got.values.size(), want.values.size());
    ASSERT_EQ(got.layers, want.layers);
    double worst = 0;
    for (std::size_t i = 0; i < want.values.size(); ++i)
      worst = std::max(worst, std::abs(got.values[i] - want.values[i]));
    EXPECT_LT(worst, 1e-5) << "item " << b;
    const InductionScores ws = inductionScores(stored.group(), b);
    const InductionScores gs = inductionScores(lazy.group(), b);
    EXPECT_EQ(gs.repeatedPositions, ws.repeatedPositions);
    worst = 0;
    for (std::size_t i = 0; i < ws.induction.size(); ++i)
      for (const auto& [x, y] :
           std::vector<std::pair<double, double>>{{gs.induction[i], ws.induction[i]},
                                                  {gs.duplicateToken[i], ws.duplicateToken[i]},
                                                  {gs.previousToken[i], ws.previousToken[i]}}) {
        EXPECT_FALSE(std::isnan(x));
        worst = std::max(worst, std::abs(x - y));
      }
    EXPECT_LT(worst, 1e-5) << "item " << b;
  }
  // The first item repeats its first six words with a gap: induction has something to read.
  EXPECT_GT(inductionScores(lazy.group(), 0).repeatedPositions, 4);
}

}  // namespace on_demand_test
}  // namespace attnscope
