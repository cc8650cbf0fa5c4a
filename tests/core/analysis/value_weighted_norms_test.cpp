// SPDX-License-Identifier: GPL-3.0-or-later
// Value-weighted norms of real runs against plain double loops written apart from the code under
// test: GPT-2 against reference_gpt2.cpp (every layer), the tiny GPT against layer 0 computed here
// from its input and weights; and a head whose output projection is zero moves nothing.
#include "attnscope/value_weighted_norms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "attnscope/error.h"
#include "attnscope/model_spec.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/toy_config.h"
#include "expect_close.h"
#include "expect_error.h"
#include "reference_gpt2.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with the head ablation and GPT-2
// tests.
namespace value_norms_test {

// The measured error in the test report (--gtest_output=xml), to 3 significant digits.
std::string scientific(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2e", v);
  return buffer;
}

RunRequest normsRequest(std::vector<std::string> texts) {
  RunRequest r;
  r.texts = std::move(texts);
  r.device = DeviceKind::Cpu;
  r.keepValueNorms = true;
  return r;
}

std::shared_ptr<Model> openFolder(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

std::vector<int64_t> idsOf(const std::vector<Token>& tokens) {
  std::vector<int64_t> ids;
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

TEST(ValueWeightedNorms, Gpt2MatchesThePlainLoopReferenceOnEveryLayer) {
  test::TempDir dir;
  const test::TinyGpt2 spec;
  const auto weights = test::writeTinyGpt2(dir.path("model"), spec);
  // Two items of different lengths: item 1 is padded, and its norms must ignore the padding.
  const AttentionResult r =
      openFolder(dir.path("model"))->run(normsRequest({"hello the world", "the cat"}));
  const AttentionGroup& g = r.group();
  ASSERT_EQ(g.valueNorms.shape, (std::vector<int64_t>{2, 2, 4, g.keys()}));
  for (int item : {0, 1}) {
    const std::vector<int64_t> ids = idsOf(g.tokens[static_cast<std::size_t>(item)]);
    const test::ReferenceGpt2 ref = test::referenceGpt2(weights, spec.layers, spec.heads, ids);
    const ValueWeightedNorms n = valueWeightedNorms(g, item);
    const int T = static_cast<int>(ids.size());
    ASSERT_EQ(n.tokens, T);
    ASSERT_EQ(n.values.size(), ref.valueNorms.size());
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < n.values.size(); ++i) {
      worst = std::max(worst, test::closeError(n.values[i], ref.valueNorms[i]));
      largest = std::max(largest, ref.valueNorms[i]);
    }
    RecordProperty("worst_error_item" + std::to_string(item), scientific(worst));  // expect_close.h
    EXPECT_LT(worst, 1e-5) << "item " << item;
    EXPECT_GT(largest, 1e-2) << "the reference norms are not all negligible";
    // Padded keys carry no norm.
    if (item == 1 && T < g.keys()) {
      const float* row = g.valueNorms.data.data() + (1 * 2 + 1) * 4 * g.keys();
      for (int k = T; k < g.keys(); ++k) EXPECT_EQ(row[k], 0.0f);
    }
  }
  // The group the window shows: the same norms for every item, padding 0, not a distribution.
  const AttentionGroup shown = valueNormGroup(g);
  EXPECT_EQ(shown.name, "value_norm");
  EXPECT_FALSE(shown.distribution);
  ASSERT_EQ(shown.attention.shape, g.attention.shape);
  for (int item : {0, 1}) {
    const ValueWeightedNorms n = valueWeightedNorms(g, item);
    for (int l = 0; l < n.layers; ++l)
      for (int h = 0; h < n.heads; ++h) {
        const float* m = shown.headMatrix(l, item, h);
        for (int i = 0; i < g.queries(); ++i)
          for (int j = 0; j < g.keys(); ++j) {
            const double want = i < n.tokens && j < n.tokens ? n.at(l, h, i, j) : 0.0;
            ASSERT_NEAR(m[i * g.keys() + j], want, 1e-6 * (1 + want))
                << "item " << item << " L" << l << " H" << h << " " << i << "," << j;
          }
      }
  }
}

TEST(ValueWeightedNorms, Gpt2HeadWithZeroOutputWeightsHasZeroNorms) {
  test::TempDir dir;
  const test::TinyGpt2 spec;
  const int zeroHead = 2;
  test::writeTinyGpt2WithSilentHead(dir.path("model"), spec, 1, zeroHead);
  const ValueWeightedNorms n = valueWeightedNorms(
      openFolder(dir.path("model"))->run(normsRequest({"hello the world"})).group());
  for (int h = 0; h < spec.heads; ++h) {
    double sum = 0;
    for (int i = 0; i < n.tokens; ++i)
      for (int j = 0; j < n.tokens; ++j) sum += n.at(1, h, i, j);
    if (h == zeroHead)
      EXPECT_EQ(sum, 0.0) << "head " << h;
    else
      EXPECT_GT(sum, 0.0) << "head " << h;
  }
}

// Layer 0 of the tiny GPT from its definition: a = LayerNorm(x) (eps 1e-5), v_j^h = a_j Wv_hᵀ
// (no bias), f = v_j^h · (proj.weight[:, h·hs ..])ᵀ, norm of α_ij f.
TEST(ValueWeightedNorms, TinyGptLayerZeroMatchesPlainLoops) {
  TinyGptConfig config;
  config.nEmbd = 16;
  config.nHead = 4;
  config.nLayer = 2;
  config.blockSize = 16;
  const TinyGpt gpt = TinyGpt::create(config, TinyGpt::vocabularyOf("abcdefgh "), 3);
  const auto model = gpt.asModel();
  const AttentionResult r = model->run(normsRequest({"abc deaf"}));
  std::map<std::string, FloatTensor> w;
  for (NamedTensor& t : model->parameters()) w[t.name] = t.tensor;
  const int T = r.group().queries(), C = 16, H = 4, hs = C / H;
  const ValueWeightedNorms n = valueWeightedNorms(r.group());
  const FloatTensor& g = w.at("blocks.0.ln1.weight");
  const FloatTensor& b = w.at("blocks.0.ln1.bias");
  const FloatTensor& proj = w.at("blocks.0.sa.proj.weight");  // [C, C], y = z Wᵀ
  double worst = 0;
  for (int j = 0; j < T; ++j) {
    const float* x = r.input.data.data() + static_cast<std::size_t>(j) * C;
    double mean = 0, var = 0;
    for (int c = 0; c < C; ++c) mean += x[c];
    mean /= C;
    for (int c = 0; c < C; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    std::vector<double> a(C);
    for (int c = 0; c < C; ++c)
      a[c] = (x[c] - mean) / std::sqrt(var + 1e-5) * g.data[c] + b.data[c];
    for (int h = 0; h < H; ++h) {
      const FloatTensor& wv = w.at("blocks.0.sa.heads." + std::to_string(h) + ".value.weight");
      std::vector<double> v(hs, 0.0), f(C, 0.0);
      for (int d = 0; d < hs; ++d)
        for (int c = 0; c < C; ++c) v[d] += a[c] * wv.data[static_cast<std::size_t>(d) * C + c];
      for (int o = 0; o < C; ++o)
        for (int d = 0; d < hs; ++d)
          f[o] += v[d] * proj.data[static_cast<std::size_t>(o) * C + h * hs + d];
      for (int i = 0; i < T; ++i) {
        const double alpha = r.group().headMatrix(0, 0, h)[static_cast<std::size_t>(i) * T + j];
        double squared = 0;
        for (double fo : f) squared += alpha * fo * alpha * fo;
        worst = std::max(worst, test::closeError(n.at(0, h, i, j), std::sqrt(squared)));
      }
    }
  }
  RecordProperty("worst_error", scientific(worst));  // |diff| / max(1, |want|): expect_close.h
  EXPECT_LT(worst, 1e-5);
}

// Llama, Mistral, Qwen, NeoX and Bloom: reference_decoders; the encoders: reference_encoders.
TEST(ValueWeightedNorms, OtherFamiliesAndPlainRunsAreRefused) {
  const auto toy = makeToyModel(ToyConfig{});
  RunRequest request = normsRequest({"hi"});
  test::expectError([&] { toy->run(request); }, ErrorKind::InvalidArgument,
                    "value-weighted norms are implemented for the decoders");
  request.keepValueNorms = false;
  const AttentionResult plain = toy->run(request);
  EXPECT_TRUE(plain.group().valueNorms.empty());
  test::expectError([&] { valueWeightedNorms(plain.group()); }, ErrorKind::InvalidArgument,
                    "keepValueNorms");
}

}  // namespace value_norms_test
}  // namespace attnscope
