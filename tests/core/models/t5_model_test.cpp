// SPDX-License-Identifier: GPL-3.0-or-later
// The t5 family and the encoder-decoder run path through the public Model API: the three attention
// groups and their tokens, causality of the decoder only, teacher forcing and greedy generation,
// the Hugging Face parameter names, the memory and token guards, cancel, and broken folders. The
// numbers are checked against PyTorch in tests/reference/t5_reference.py.
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
#include "attnscope/toy_config.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "t5_fixtures.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

using namespace test::t5_fixture;  // t5Config, t5Shapes and their sizes

std::string writeFolder(const test::TempDir& dir, const nlohmann::json& config,
                        const Shapes& shapes) {
  return test::writeHfFolder(dir, config, shapes, 5, 0.5f);
}

std::shared_ptr<Model> open(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  return openModel(spec);
}

float at(const AttentionGroup& g, int l, int b, int h, int q, int k) {
  return g.headMatrix(l, b, h)[static_cast<std::size_t>(q) * g.keys() + k];
}

TEST(T5Model, InfoAndHuggingFaceParameterNames) {
  test::TempDir dir;
  const auto model = open(writeFolder(dir, t5Config(), t5Shapes(true, false)));
  const ModelInfo i = model->info();
  EXPECT_EQ(i.kind, "t5");
  EXPECT_TRUE(i.encoderDecoder());
  EXPECT_EQ(i.layers, kEncoderLayers);
  EXPECT_EQ(i.decoderLayers, kDecoderLayers);
  EXPECT_EQ(i.heads, kHeads);
  EXPECT_FALSE(i.causal);        // the encoder is bidirectional
  EXPECT_EQ(i.maxPositions, 0);  // relative positions: no trained length
  std::map<std::string, std::vector<int64_t>> got;
  for (const NamedTensor& p : model->parameters()) got[p.name] = p.tensor.shape;
  EXPECT_EQ(got.size(), t5Shapes(true, false).size());  // tied: no lm_head
  for (const auto& [name, shape] : t5Shapes(true, false)) EXPECT_EQ(got[name], shape) << name;

  test::TempDir mt5;  // mT5 is T5 v1.1's layers under its own model_type
  nlohmann::json c = t5Config();
  c["model_type"] = "mt5";
  EXPECT_EQ(open(writeFolder(mt5, c, t5Shapes(true, false)))->info().kind, "mt5");
}

TEST(T5Model, ThreeGroupsWithTheirTokensAndOnlyTheDecoderCausal) {
  test::TempDir dir;
  const auto model = open(writeFolder(dir, t5Config(), t5Shapes(true, false)));
  RunRequest r;
  r.texts = {"the cat sat on the mat", "a dog"};
  r.target = "the dog sat on a cat .";
  const AttentionResult res = model->run(r);
  ASSERT_EQ(res.groups.size(), 3u);
  const AttentionGroup &self = res.groups[0], &dec = res.groups[1], &cross = res.groups[2];
  EXPECT_EQ(self.name, "self");
  EXPECT_EQ(dec.name, "decoder_self");
  EXPECT_EQ(cross.name, "cross");
  // The source gains the end-of-sequence token; the target keeps its own "." (not special).
  EXPECT_EQ(self.queryLengths, (std::vector<int>{7, 3}));
  EXPECT_EQ(self.tokens[0].back().id, kEos);
  EXPECT_EQ(dec.queryLengths, (std::vector<int>{8, 8}));
  EXPECT_EQ(dec.tokens[0].front().id, 0);  // decoder_start_token_id
  EXPECT_TRUE(dec.tokens[0].front().special);
  EXPECT_EQ(dec.tokens[0][1].label, self.tokens[0][0].label);  // "the"
  const auto ids = [](const std::vector<std::vector<Token>>& batch) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& item : batch) {
      out.emplace_back();
      for (const Token& t : item) out.back().push_back(t.id);
    }
    return out;
  };
  EXPECT_EQ(ids(cross.tokens), ids(dec.tokens));
  EXPECT_EQ(ids(cross.contextTokens), ids(self.tokens));
  EXPECT_EQ(cross.keyLengths, self.queryLengths);
  EXPECT_EQ(self.attention.shape, (std::vector<int64_t>{kEncoderLayers, 2, kHeads, 7, 7}));
  EXPECT_EQ(dec.attention.shape, (std::vector<int64_t>{kDecoderLayers, 2, kHeads, 8, 8}));
  EXPECT_EQ(cross.attention.shape, (std::vector<int64_t>{kDecoderLayers, 2, kHeads, 8, 7}));
  EXPECT_FALSE(cross.scores.empty());
  EXPECT_EQ(res.output.shape, (std::vector<int64_t>{2, 7, kModel}));
  EXPECT_EQ(res.decoderOutput.shape, (std::vector<int64_t>{2, 8, kModel}));
  EXPECT_EQ(res.nextTokens.size(), 2u);

  bool encoderSeesFuture = false, crossSeesFuture = false;
  for (int b = 0; b < 2; ++b) {
    for (int h = 0; h < kHeads; ++h) {
      for (int q = 0; q < 8; ++q) {
        double decSum = 0, crossSum = 0;
        for (int k = 0; k < 8; ++k) {
          if (k > q) {
            EXPECT_EQ(at(dec, 1, b, h, q, k), 0.0f) << "decoder self-attention is causal";
          }
          decSum += at(dec, 1, b, h, q, k);
        }
        for (int k = 0; k < 7; ++k) {
          const float a = at(cross, 2, b, h, q, k);
          if (k >= cross.keyLengths[b]) {
            EXPECT_EQ(a, 0.0f) << "padded source key";
          }
          crossSeesFuture |= k > q && a > 0;
          crossSum += a;
        }
        EXPECT_NEAR(decSum, 1.0, 1e-5);
        EXPECT_NEAR(crossSum, 1.0, 1e-5);
      }
      for (int q = 0; q < 7; ++q) {
        for (int k = 0; k < 7; ++k) {
          if (q >= self.queryLengths[b] || k >= self.keyLengths[b]) {
            EXPECT_EQ(at(self, 0, b, h, q, k), 0.0f) << "encoder padding";
          }
          encoderSeesFuture |= k > q && at(self, 0, b, h, q, k) > 0;
        }
      }
    }
  }
  EXPECT_TRUE(encoderSeesFuture) << "the encoder is bidirectional";
  EXPECT_TRUE(crossSeesFuture) << "cross-attention is not causal";

  // One trace per layer: the encoder's, then the decoder's with its cross-attention branch.
  ASSERT_EQ(res.traces.size(), static_cast<std::size_t>(kEncoderLayers + kDecoderLayers));
  EXPECT_EQ(res.traces.front().stack, "encoder");
  EXPECT_EQ(res.traces.back().stack, "decoder");
  bool crossStep = false, bias = false;
  for (const TraceStep& s : res.traces.back().steps) {
    if (s.name == "cross_k") {
      crossStep = true;
      EXPECT_EQ(s.shape, (std::vector<int64_t>{2, kHeads, 7, kKv}));  // keys from the source
    }
    bias |= s.kind == "position_bias";
  }
  EXPECT_TRUE(crossStep);
  EXPECT_TRUE(bias);
}

TEST(T5Model, GreedyGenerationExtendsTheDecoderInput) {
  test::TempDir dir;
  nlohmann::json c = t5Config();  // T5 v1.0: ReLU, untied head
  c["feed_forward_proj"] = "relu";
  c["tie_word_embeddings"] = false;
  const auto model = open(writeFolder(dir, c, t5Shapes(false, true)));
  RunRequest r;
  r.texts = {"the cat sat on the mat"};
  r.generate = 4;
  const AttentionResult res = model->run(r);
  ASSERT_EQ(res.generated.size(), 1u);
  const std::vector<Token>& generated = res.generated[0];
  ASSERT_GE(generated.size(), 1u);
  ASSERT_LE(generated.size(), 4u);
  for (std::size_t i = 0; i + 1 < generated.size(); ++i) EXPECT_NE(generated[i].id, kEos);
  if (generated.size() < 4) {
    EXPECT_EQ(generated.back().id, kEos);  // stopped early only at the end token
  }
  const AttentionGroup& dec = res.group("decoder_self");
  ASSERT_EQ(dec.tokens[0].size(), generated.size() + 1);
  for (std::size_t i = 0; i < generated.size(); ++i)
    EXPECT_EQ(dec.tokens[0][i + 1].id, generated[i].id);
  // Each greedy token is the top prediction after the inputs before it (teacher-forced with the
  // labels of the tokens so far, which the word-level fixture reads back as the same ids).
  for (std::size_t i = 0; i < generated.size(); ++i) {
    RunRequest prefix = r;
    prefix.generate = 0;
    std::string text;
    for (std::size_t j = 0; j < i; ++j) text += (j ? " " : "") + generated[j].label;
    if (i > 0) prefix.target = text;
    const AttentionResult step = model->run(prefix);
    const std::vector<Token>& inputs = step.group("decoder_self").tokens[0];
    ASSERT_EQ(inputs.size(), i + 1);
    for (std::size_t j = 0; j < i; ++j) ASSERT_EQ(inputs[j + 1].id, generated[j].id);
    EXPECT_EQ(step.nextToken.front().token.id, generated[i].id) << "step " << i;
  }
}

TEST(T5Model, RefusalsGuardsAndCancel) {
  test::TempDir dir;
  const auto model = open(writeFolder(dir, t5Config(), t5Shapes(true, false)));
  RunRequest r;
  r.texts = {"the cat sat on the mat"};
  r.target = "a dog";
  r.limits.memoryLimitBytes = 1024;
  test::expectError([&] { model->run(r); }, ErrorKind::ResourceLimit, "decoder layers");
  r.limits = RunLimits{};
  r.target.reset();
  r.generate = 10;
  r.limits.maxTokens = 8;
  test::expectError([&] { model->run(r); }, ErrorKind::ResourceLimit, "decoder input");
  r.limits = RunLimits{};
  r.generate = -1;
  test::expectError([&] { model->run(r); }, ErrorKind::InvalidArgument, "negative");
  // Progress counts the encoder's layers, then the decoder's (not the generation steps).
  r.generate = 2;
  std::vector<std::pair<int, int>> calls;
  r.progress = [&](int done, int total) { calls.emplace_back(done, total); };
  model->run(r);
  const ModelInfo mi = model->info();
  const int total = mi.layers + mi.decoderLayers;
  ASSERT_EQ(static_cast<int>(calls.size()), total);
  for (int l = 0; l < total; ++l)
    EXPECT_EQ(calls[static_cast<std::size_t>(l)], std::make_pair(l + 1, total));
  r.progress = nullptr;
  r.generate = 0;
  const std::atomic<bool> cancel{true};
  r.cancel = &cancel;
  test::expectError([&] { model->run(r); }, ErrorKind::Cancelled, "cancelled");

  // A single stack has no decoder to read a target or generate into.
  RunRequest toy;
  toy.texts = {"hello"};
  toy.target = "bonjour";
  test::expectError([&] { makeToyModel(ToyConfig{})->run(toy); }, ErrorKind::InvalidArgument,
                    "not an encoder-decoder");
}

TEST(T5Model, BrokenFoldersNameTheFieldOrTensor) {
  test::TempDir a;
  Shapes noBias = t5Shapes(true, false);
  noBias.erase("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  test::expectError([&] { open(writeFolder(a, t5Config(), noBias)); }, ErrorKind::Format,
                    "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  test::TempDir b;
  nlohmann::json c = t5Config();
  c["feed_forward_proj"] = "gelu-gated";
  test::expectError([&] { open(writeFolder(b, c, t5Shapes(true, false))); }, ErrorKind::Format,
                    "feed_forward_proj");
  test::TempDir d;  // gated config, plain weights: the loader names the first missing tensor
  test::expectError([&] { open(writeFolder(d, t5Config(), t5Shapes(false, false))); },
                    ErrorKind::Format, "DenseReluDense.wi_0.weight");
  test::TempDir e;  // untied and no lm_head (a T5Model): no predictions, no generation
  c = t5Config();
  c["tie_word_embeddings"] = false;
  const auto encoderOnly = open(writeFolder(e, c, t5Shapes(true, false)));
  RunRequest r;
  r.texts = {"the cat"};
  EXPECT_TRUE(encoderOnly->run(r).nextTokens.empty());
  r.generate = 2;
  test::expectError([&] { encoderOnly->run(r); }, ErrorKind::InvalidArgument,
                    "no language-model head");
}

}  // namespace
}  // namespace attnscope
