// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 16, items 2, 3, 5, 8 and 11: configurations are parsed strictly and checked against the
// checkpoint's headers before anything is built, memory is refused before it is allocated, and
// non-finite weights are reported. Each case is one of the issue's reproductions.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "attnscope/bpe_tokenizer.h"
#include "attnscope/error.h"
#include "attnscope/model_spec.h"
#include "attnscope/safetensors.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/training.h"
#include "expect_error.h"
#include "gpt2_byte_symbols.h"
#include "temp_dir.h"
#include "tiny_gpt2.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

long peakRssMiB() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Runs f, which must throw Error(kind) mentioning word, within a second and without growing
// this process's peak memory by more than 100 MiB: refused before allocating.
template <typename F>
void expectRefusedFast(F&& f, ErrorKind kind, const std::string& word) {
  const long before = peakRssMiB();
  const auto t0 = std::chrono::steady_clock::now();
  test::expectError(f, kind, word);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0)
      << word;
  EXPECT_LT(peakRssMiB() - before, 100) << word;
}

// A small tiny-GPT checkpoint whose metadata a test may change.
struct TinyCheckpoint {
  std::vector<NamedTensor> params;
  std::map<std::string, std::string> meta;
  TinyCheckpoint() {
    const TinyGpt m = TinyGpt::create({1, 2, 8, 6, 0}, {"a", "b"}, 5);
    params = m.asModel()->parameters();
    meta = {{"attnscope.kind", "tiny-gpt"},
            {"attnscope.config",
             R"({"n_layer":1,"n_head":2,"n_embd":8,"block_size":6,"vocab_size":2})"},
            {"attnscope.vocab", R"(["a","b"])"}};
  }
  std::string write(const TempDir& dir, const std::string& name) const {
    writeSafetensors(dir.path(name), params, meta);
    return dir.path(name);
  }
};

TEST(TinyGptCheckpoint, IntegersAreStrictNotTruncated) {
  TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {R"({"n_layer":4294967300,"n_head":2,"n_embd":8,"block_size":6,"vocab_size":2})",
       "4294967300"},
      {R"({"n_layer":1,"n_head":2,"n_embd":64.7,"block_size":6,"vocab_size":2})", "64.7"},
      {R"({"n_layer":true,"n_head":2,"n_embd":8,"block_size":6,"vocab_size":2})", "n_layer"},
      {R"({"n_layer":1,"n_head":2,"n_embd":8,"block_size":2147483648,"vocab_size":2})",
       "2147483648"},
      {R"({"n_layer":1,"n_layer":1,"n_head":2,"n_embd":8,"block_size":6,"vocab_size":2})",
       "duplicate key \"n_layer\""},
  };
  for (const auto& [config, word] : cases) {
    TinyCheckpoint c;
    c.meta["attnscope.config"] = config;
    const std::string path = c.write(dir, "bad.safetensors");
    test::expectError([&] { TinyGpt::load(path); }, ErrorKind::Format, word);
    // The block size is never reported wrapped around to a negative number.
    test::expectError([&] { TinyGpt::load(path); }, ErrorKind::Format, "attnscope.config");
  }
}

TEST(TinyGptCheckpoint, VocabularyEntriesAreSingleCharacters) {
  TempDir dir;
  const std::pair<std::string, const char*> cases[] = {
      {R"(["a","ab"])", "more than one character"},
      {R"(["a",""])", "is empty"},
      {R"(["a","\u0000"])", "NUL"},
      {R"(["a","a"])", "duplicate"},
      {R"(["a",1])", "not a string"},
  };
  for (const auto& [vocab, word] : cases) {
    TinyCheckpoint c;
    c.meta["attnscope.vocab"] = vocab;
    const std::string path = c.write(dir, "vocab.safetensors");
    test::expectError([&] { TinyGpt::load(path); }, ErrorKind::Format, word);
  }
  EXPECT_NO_THROW(TinyGpt::load(TinyCheckpoint().write(dir, "good.safetensors")));
}

TEST(TinyGptCheckpoint, SizesAreCheckedAgainstTheHeaderBeforeBuilding) {
  TempDir dir;
  // In range, but not what the weights hold: each is refused from the header alone.
  const std::pair<const char*, const char*> cases[] = {
      {R"({"n_layer":64,"n_head":2,"n_embd":8,"block_size":6,"vocab_size":2})", "blocks.63."},
      {R"({"n_layer":1,"n_head":2,"n_embd":8,"block_size":65536,"vocab_size":2})",
       "position_embedding_table.weight"},
      {R"({"n_layer":1,"n_head":2,"n_embd":8192,"block_size":6,"vocab_size":2})",
       "token_embedding_table.weight"},
      {R"({"n_layer":1,"n_head":1,"n_embd":8,"block_size":6,"vocab_size":2})",
       "sa.heads.0.key.weight"},
  };
  for (const auto& [config, word] : cases) {
    TinyCheckpoint c;
    c.meta["attnscope.config"] = config;
    const std::string path = c.write(dir, "shape.safetensors");
    expectRefusedFast([&] { TinyGpt::load(path); }, ErrorKind::Format, word);
  }
}

class Gpt2Folder : public ::testing::Test {
 protected:
  void SetUp() override { test::writeTinyGpt2(folder(), m_spec); }
  std::string folder() const { return m_dir.path("gpt2"); }
  void writeConfig(const nlohmann::json& changes) {
    nlohmann::json c = nlohmann::json::parse(test::tinyConfigJson(m_spec));
    c.update(changes);
    std::ofstream(fs::path(folder()) / "config.json") << c.dump();
  }
  std::shared_ptr<Model> open() {
    ModelSpec spec;
    spec.source = folder();
    return openModel(spec);
  }
  TempDir m_dir;
  test::TinyGpt2 m_spec;
};

TEST_F(Gpt2Folder, HugeSizesAreRefusedBeforeBuilding) {
  // The issue's 700-byte config with n_layer 2^20 took 40 s and 11 GB before failing.
  writeConfig({{"n_layer", 1 << 20}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "n_layer");
  writeConfig({{"n_layer", 1000}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "h.999.");
  writeConfig({{"n_positions", 1 << 20}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "wpe.weight");
  writeConfig({{"vocab_size", 1 << 22}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "wte.weight");
  writeConfig({{"n_embd", 65536}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "wte.weight");
  writeConfig({{"n_embd", 1 << 30}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "up to 65536");
  writeConfig({{"n_layer", 2.0}});
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "n_layer");
  std::ofstream(fs::path(folder()) / "config.json")
      << R"({"n_layer":2,"n_layer":2,"n_head":4,"n_embd":16,"n_positions":32,"vocab_size":259})";
  expectRefusedFast([&] { open(); }, ErrorKind::Format, "duplicate key");
  writeConfig(nlohmann::json::object());
  EXPECT_NO_THROW(open());
}

TEST(ToyMemory, WeightsAreEstimatedFromTheConfigBeforeBuilding) {
  ModelSpec spec;
  spec.toy.inputDim = spec.toy.dModel = 16384;
  spec.toy.heads = 1;
  spec.memoryLimitBytes = 1024ull << 20;
  // Held 4.3 GB for 9 s before refusing.
  expectRefusedFast([&] { openModel(spec); }, ErrorKind::ResourceLimit, "need about 4.0 GiB");
  spec.toy.inputDim = spec.toy.dModel = spec.toy.heads = 65536;
  spec.memoryLimitBytes = 8ull << 30;
  // Exited 1 with a LibTorch backtrace.
  expectRefusedFast([&] { openModel(spec); }, ErrorKind::ResourceLimit, "64.0 GiB");
}

TEST(ToyMemory, RandomInputIsEstimatedBeforeTheBatchExists) {
  ModelSpec spec;
  const auto model = openModel(spec);
  RunRequest r;
  r.random = RandomInput{1 << 20, 1000};
  // Reached 7 GB, then std::bad_alloc.
  expectRefusedFast([&] { model->run(r); }, ErrorKind::ResourceLimit, "needs about");
}

TEST(NonFinite, NanWeightsGiveANoticeNamingTheTensor) {
  TempDir dir;
  TinyCheckpoint c;
  NamedTensor* broken = nullptr;
  for (NamedTensor& t : c.params)
    if (t.name == "blocks.0.ln1.weight") broken = &t;
  ASSERT_NE(broken, nullptr);
  broken->tensor.data[0] = std::numeric_limits<float>::quiet_NaN();
  const auto model = TinyGpt::load(c.write(dir, "nan.safetensors")).asModel();
  RunRequest r;
  r.texts = {"abba"};
  const AttentionResult result = model->run(r);
  std::string all;
  for (const std::string& n : result.notices) all += n + "\n";
  EXPECT_NE(all.find("'blocks.0.ln1.weight'"), std::string::npos) << all;
  EXPECT_NE(all.find("the attention holds NaN"), std::string::npos) << all;
  ASSERT_FALSE(result.nextToken.empty());
  EXPECT_TRUE(std::isnan(result.nextToken[0].probability));  // the CLI prints "n/a" for it
  // Healthy weights: no such notice.
  const auto good = TinyGpt::load(TinyCheckpoint().write(dir, "good.safetensors")).asModel();
  for (const std::string& n : good->run(r).notices)
    EXPECT_EQ(n.find("NaN"), std::string::npos) << n;
}

TEST(TrainingMemory, BlockAndBatchAreEstimatedBeforeAllocating) {
  const std::string corpus(4000, 'a');
  TrainOptions o;
  o.model = {1, 1, 8, 65536, 0};
  o.batch = 32;
  o.steps = 1;
  // Reached 9.4 GB.
  expectRefusedFast([&] { trainTinyGpt(corpus + "b", o); }, ErrorKind::ResourceLimit,
                    "needs about");
  o.model = {1, 1, 8, 16, 0};
  test::expectError([&] { trainTinyGpt(corpus + std::string(1, '\0'), o); },
                    ErrorKind::InvalidArgument, "NUL");
  // The estimate of the bundled model's training run is modest.
  TinyGptConfig small{4, 4, 64, 128, 65};
  EXPECT_LT(estimateTrainingBytes(small, 16, 1 << 20), 2ull << 30);
}

TEST(BpeMerges, EmptyOrRepeatedMergesAreRefused) {
  TempDir dir;
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[test::gpt2ByteSymbol(static_cast<unsigned char>(b))] = b;
  vocab[test::gpt2Symbols("ab")] = 256;
  dir.writeBytes("vocab.json", vocab.dump());
  const auto kind = [&](const std::string& merges, const std::string& word) {
    dir.writeBytes("merges.txt", merges);
    test::expectError(
        [&] { BpeTokenizer::fromFiles(dir.path("vocab.json"), dir.path("merges.txt")); },
        ErrorKind::Format, word);
  };
  kind("", "the file is empty");
  kind("#version: 0.2\n", "has no merges");
  kind("#version: 0.2\na b\na b\n", "listed twice");
  dir.writeBytes("merges.txt", "#version: 0.2\na b\n");
  EXPECT_NO_THROW(BpeTokenizer::fromFiles(dir.path("vocab.json"), dir.path("merges.txt")));
}

}  // namespace
}  // namespace attnscope
