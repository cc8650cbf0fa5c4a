// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "attnscope/model_spec.h"
#include "attnscope/safetensors.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/training.h"
#include "expect_error.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

// Random 5-letter segments over an 8-letter alphabet, each repeated 6 times: after the first
// copy, every character repeats the one `period` positions earlier.
std::string copyingCorpus(int period, std::size_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out;
  while (out.size() < length) {
    std::string seg;
    for (int i = 0; i < period; ++i) seg += static_cast<char>('a' + rng() % 8);
    for (int r = 0; r < 6; ++r) out += seg;
  }
  return out;
}

TEST(TinyGpt, LearnsACopyingPatternWithAHeadAtTheCopyOffset) {
  const int period = 5;
  const std::string corpus = copyingCorpus(period, 60000, 1);
  TrainOptions o;
  o.model = {1, 2, 32, 24, 0};
  o.steps = 400;
  o.batch = 32;
  o.learningRate = 3e-3;
  o.evalEvery = 400;
  o.evalWindows = 32;
  const TrainResult r = trainTinyGpt(corpus, o);
  const double uniform = std::log(8.0);
  // Only the first copy of each segment (1 in 6) is unpredictable: ~log(8)/6 at best.
  EXPECT_LT(r.finalValLoss, 0.5 * uniform) << "uniform baseline " << uniform;

  // Predicting x[t+1] = x[t+1-period] means the query at t must look at key t-(period-1).
  RunRequest req;
  req.texts = {copyingCorpus(period, 24, 99).substr(0, 24)};
  req.device = DeviceKind::Cpu;
  const AttentionResult a = r.model.asModel()->run(req);
  const int offset = period - 1;
  double best = 0;
  for (int h = 0; h < a.group().heads(); ++h) {
    double mass = 0;
    int n = 0;
    for (int q = offset; q < a.group().queries(); ++q) {
      mass += a.group().headMatrix(0, 0, h)[q * a.group().keys() + (q - offset)];
      ++n;
    }
    best = std::max(best, mass / n);
  }
  EXPECT_GT(best, 0.5) << "no head concentrates its attention at offset -" << offset;
}

TEST(TinyGpt, TrainingIsDeterministicForASeed) {
  const std::string corpus = copyingCorpus(3, 4000, 2);
  TrainOptions o;
  o.model = {1, 2, 16, 8, 0};
  o.steps = 5;
  o.evalEvery = 5;
  o.evalWindows = 4;
  const auto a = trainTinyGpt(corpus, o).model.asModel()->parameters();
  const auto b = trainTinyGpt(corpus, o).model.asModel()->parameters();
  o.seed = 7;
  const auto c = trainTinyGpt(corpus, o).model.asModel()->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].tensor.data, b[i].tensor.data) << a[i].name;
  EXPECT_NE(a[0].tensor.data, c[0].tensor.data);
}

TEST(TinyGpt, CancelStopsTraining) {
  std::atomic<bool> cancel{false};
  TrainCallbacks cb;
  cb.cancel = &cancel;
  cb.onProgress = [&](const TrainProgress& p) {
    if (p.step >= 2) cancel = true;
  };
  TrainOptions o;
  o.model = {1, 1, 8, 8, 0};
  o.steps = 1000;
  const TrainResult r = trainTinyGpt(copyingCorpus(3, 2000, 3), o, cb);
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(r.stepsDone, 1000);
}

TEST(TinyGpt, ParameterNamesMatchTheChapter) {
  const TinyGpt m = TinyGpt::create({2, 4, 16, 8, 0}, {"a", "b", "c"}, 0);
  std::vector<std::string> names;
  for (const auto& p : m.asModel()->parameters()) names.push_back(p.name);
  for (const char* want :
       {"token_embedding_table.weight", "position_embedding_table.weight",
        "blocks.1.sa.heads.3.query.weight", "blocks.0.sa.proj.bias", "blocks.0.ffwd.net.0.weight",
        "blocks.0.ffwd.net.2.bias", "blocks.1.ln1.weight", "blocks.1.ln2.bias", "ln_f.weight",
        "lm_head.bias"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST(TinyGpt, CheckpointRoundTripIsExact) {
  test::TempDir dir;
  const TinyGpt m =
      TinyGpt::create({2, 2, 8, 6, 0}, TinyGpt::vocabularyOf("héllo wörld 🙂\n"), 5);
  m.save(dir.path("m.safetensors"));
  const TinyGpt back = TinyGpt::load(dir.path("m.safetensors"));
  EXPECT_EQ(back.vocab(), m.vocab());
  EXPECT_EQ(back.config().nLayer, 2);
  EXPECT_EQ(back.config().blockSize, 6);
  const auto a = m.asModel()->parameters(), b = back.asModel()->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].tensor.shape, b[i].tensor.shape);
    EXPECT_EQ(a[i].tensor.data, b[i].tensor.data);
  }
  const auto meta = SafetensorsFile::open(dir.path("m.safetensors")).metadata();
  EXPECT_EQ(meta.at("attnscope.kind"), "tiny-gpt");
  EXPECT_EQ(meta.at("attnscope.config"),
            R"({"block_size":6,"n_embd":8,"n_head":2,"n_layer":2,"vocab_size":11})");
}

TEST(TinyGpt, MalformedCheckpointsNameTheProblem) {
  test::TempDir dir;
  const TinyGpt m = TinyGpt::create({1, 2, 8, 6, 0}, {"a", "b"}, 5);
  const auto params = m.asModel()->parameters();
  const std::map<std::string, std::string> meta = {
      {"attnscope.kind", "tiny-gpt"},
      {"attnscope.config", R"({"n_layer":1,"n_head":2,"n_embd":8,"block_size":6,"vocab_size":2})"},
      {"attnscope.vocab", R"(["a","b"])"}};
  writeSafetensors(dir.path("nometa.safetensors"), params);
  test::expectError([&] { TinyGpt::load(dir.path("nometa.safetensors")); }, ErrorKind::Format,
                    "not a tiny-gpt checkpoint");
  auto missing = params;
  missing.pop_back();
  writeSafetensors(dir.path("missing.safetensors"), missing, meta);
  test::expectError([&] { TinyGpt::load(dir.path("missing.safetensors")); }, ErrorKind::Format,
                    "missing tensor 'lm_head.bias'");
  auto wrong = params;
  wrong[0].tensor = FloatTensor({3, 8});
  writeSafetensors(dir.path("shape.safetensors"), wrong, meta);
  test::expectError([&] { TinyGpt::load(dir.path("shape.safetensors")); }, ErrorKind::Format,
                    "has shape [3, 8]");
  auto badVocab = meta;
  badVocab["attnscope.vocab"] = R"(["a"])";
  writeSafetensors(dir.path("vocab.safetensors"), params, badVocab);
  test::expectError([&] { TinyGpt::load(dir.path("vocab.safetensors")); }, ErrorKind::Format,
                    "vocab_size is 2");
  auto badJson = meta;
  badJson["attnscope.config"] = "{n_layer";
  writeSafetensors(dir.path("json.safetensors"), params, badJson);
  test::expectError([&] { TinyGpt::load(dir.path("json.safetensors")); }, ErrorKind::Format,
                    "attnscope.config");
  test::expectError([&] { TinyGpt::load(dir.path("absent.safetensors")); }, ErrorKind::Io,
                    "absent.safetensors");
}

TEST(TinyGpt, RunShowsEveryLayerAWindowNoticeAndUnknownCharacters) {
  const TinyGpt m = TinyGpt::create({3, 2, 8, 6, 0}, {" ", "a", "b", "c"}, 1);
  RunRequest req;
  req.device = DeviceKind::Cpu;
  req.texts = {"abcabcab", "ab"};
  AttentionResult r = m.asModel()->run(req);
  EXPECT_EQ(r.group().attention.shape, (std::vector<int64_t>{3, 2, 2, 6, 6}));
  EXPECT_EQ(r.traces.size(), 3u);
  ASSERT_FALSE(r.notices.empty());
  EXPECT_NE(r.notices[0].find("showing tokens 3-8"), std::string::npos) << r.notices[0];
  EXPECT_EQ(r.group().tokens[0].front().text, "c");  // the last 6 of 8
  EXPECT_EQ(r.nextToken.size(), 4u);
  // Each sentence gets its own candidates: the padded second item's equal a run of it alone.
  ASSERT_EQ(r.nextTokens.size(), 2u);
  EXPECT_EQ(r.nextTokens[0].front().token.id, r.nextToken.front().token.id);
  RunRequest alone = req;
  alone.texts = {"ab"};
  const AttentionResult single = m.asModel()->run(alone);
  ASSERT_EQ(r.nextTokens[1].size(), single.nextToken.size());
  for (std::size_t i = 0; i < single.nextToken.size(); ++i) {
    EXPECT_EQ(r.nextTokens[1][i].token.id, single.nextToken[i].token.id);
    EXPECT_NEAR(r.nextTokens[1][i].probability, single.nextToken[i].probability, 1e-5);
  }
  req.texts = {"ab z"};
  r = m.asModel()->run(req);
  EXPECT_TRUE(r.group().tokens[0][3].unknown);
  EXPECT_NE(r.notices.back().find("not in the model's vocabulary"), std::string::npos);
}

// The bundled model: committed under resources/models, trained on Tiny Shakespeare.
TEST(TinyGpt, BundledModelMeetsItsValidationBound) {
  const std::string path = defaultModelPath();
  ASSERT_FALSE(path.empty()) << "resources/models/tiny-shakespeare.safetensors is missing";
  const TinyGpt m = TinyGpt::load(path);
  EXPECT_EQ(m.config().nLayer, 4);
  EXPECT_EQ(m.config().nHead, 4);
  EXPECT_EQ(m.config().nEmbd, 64);
  EXPECT_EQ(m.config().blockSize, 128);
  const std::string corpusPath = std::string(ATTNSCOPE_SHARED_DATA) + "/tinyshakespeare.txt";
  std::ifstream in(corpusPath, std::ios::binary);
  if (!in) GTEST_SKIP() << "no " << corpusPath;
  std::stringstream ss;
  ss << in.rdbuf();
  const double loss = m.validationLoss(validationSplit(ss.str()), 300);
  EXPECT_LE(loss, 1.75);
  ModelSpec spec;
  spec.source = "default";
  EXPECT_EQ(openModel(spec)->info().kind, "tiny-gpt");
}

}  // namespace
}  // namespace attnscope
