// SPDX-License-Identifier: GPL-3.0-or-later
// MarianVocabulary: source.spm's and target.spm's pieces (spm_encode's, from
// tests/data/tokenizers/reference/spm.json) mapped to vocab.json's ids, pieces vocab.json lacks
// read as <unk>, labels of ids, and the malformed folders it refuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "expect_error.h"
#include "temp_dir.h"
#include "tokenizers/marian_vocabulary.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target
// that define the same helper names.
namespace marian_vocabulary_test {

namespace fs = std::filesystem;

// spm_encode's pieces of "Hello world": unigram.model (source.spm), spm_bpe.model (target.spm).
const std::vector<std::string> kSourcePieces = {
    "\xE2\x96\x81H", "ell", "o", "\xE2\x96\x81", "wo", "r", "ld"};
const std::vector<std::string> kTargetPieces = {"\xE2\x96\x81",  "H",  "el", "l", "o",
                                                "\xE2\x96\x81w", "or", "l",  "d"};

/// A Marian folder: unigram.model as source.spm, spm_bpe.model as target.spm, and vocab.json.
std::string writeMarianFolder(const test::TempDir& dir, const nlohmann::json& vocab) {
  const fs::path folder = dir.path("marian");
  fs::create_directories(folder);
  const fs::path data = fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers";
  fs::copy_file(data / "unigram.model", folder / "source.spm",
                fs::copy_options::overwrite_existing);
  fs::copy_file(data / "spm_bpe.model", folder / "target.spm",
                fs::copy_options::overwrite_existing);
  std::ofstream(folder / "vocab.json") << vocab.dump();
  return folder.string();
}

/// Every source and target piece of "Hello world" but "ld", at ids of our own from 10 up (not
/// SentencePiece's), beside <unk> 1 and </s> 0.
nlohmann::json marianVocab() {
  nlohmann::json v = {{"</s>", 0}, {"<unk>", 1}};
  int64_t next = 10;
  for (const auto* pieces : {&kSourcePieces, &kTargetPieces}) {
    for (const std::string& p : *pieces) {
      if (p != "ld" && !v.contains(p)) v[p] = next++;
    }
  }
  return v;
}

/// The vocabulary, or a skip when libsentencepiece cannot be opened here (AddressSanitizer).
bool openOrSkip(const std::string& folder, std::unique_ptr<MarianVocabulary>* out) {
  try {
    *out = std::make_unique<MarianVocabulary>(folder);
    return true;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unavailable) throw;
    return false;
  }
}

TEST(MarianVocabulary, PiecesTakeVocabJsonIds) {
  test::TempDir dir;
  const nlohmann::json vocab = marianVocab();
  std::unique_ptr<MarianVocabulary> v;
  if (!openOrSkip(writeMarianFolder(dir, vocab), &v)) GTEST_SKIP() << "no libsentencepiece";
  for (const bool target : {false, true}) {
    const std::vector<std::string>& pieces = target ? kTargetPieces : kSourcePieces;
    const std::vector<Token> tokens = v->encode("Hello world", target);
    ASSERT_EQ(tokens.size(), pieces.size()) << (target ? "target.spm" : "source.spm");
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (pieces[i] == "ld") {
        EXPECT_EQ(tokens[i].id, 1) << "a piece vocab.json lacks reads as <unk>";
        EXPECT_TRUE(tokens[i].unknown);
      } else {
        EXPECT_EQ(tokens[i].id, vocab.at(pieces[i]).get<int64_t>()) << pieces[i];
        EXPECT_FALSE(tokens[i].unknown) << pieces[i];
      }
    }
    // Byte spans stay SentencePiece's: the pieces cover "Hello world" in order.
    EXPECT_EQ(tokens.front().byteBegin, 0u);
    EXPECT_EQ(tokens.back().byteEnd, std::string("Hello world").size());
  }
}

TEST(MarianVocabulary, IdsReadBackAsPieces) {
  test::TempDir dir;
  const std::string folder = writeMarianFolder(dir, marianVocab());
  std::unique_ptr<MarianVocabulary> v;
  if (!openOrSkip(folder, &v)) GTEST_SKIP() << "no libsentencepiece";
  const Token word = v->tokenOf(marianVocab().at("\xE2\x96\x81H").get<int64_t>());
  EXPECT_EQ(word.text, " H");              // "▁" decodes as a space
  EXPECT_EQ(word.label, "\xE2\x90\xA3H");  // and shows as "␣"
  EXPECT_FALSE(word.special);
  const Token eos = v->tokenOf(0);
  EXPECT_EQ(eos.text, "</s>");
  EXPECT_TRUE(eos.special);
  const Token missing = v->tokenOf(9);  // between </s>'s and the pieces' ids: in no entry
  EXPECT_TRUE(missing.unknown);
  EXPECT_EQ(missing.label, "<id 9>");
  EXPECT_EQ(v->size(), static_cast<std::size_t>(marianVocab().size() - 2 + 10));
  EXPECT_EQ(v->source(), (fs::path(folder) / "vocab.json").string());
}

TEST(MarianVocabulary, MalformedFoldersAreNamed) {
  test::TempDir dir;
  const std::string folder = writeMarianFolder(dir, marianVocab());
  std::unique_ptr<MarianVocabulary> good;
  if (!openOrSkip(folder, &good)) GTEST_SKIP() << "no libsentencepiece";
  nlohmann::json noUnk = marianVocab();
  noUnk.erase("<unk>");
  writeMarianFolder(dir, noUnk);
  test::expectError([&] { MarianVocabulary m(folder); }, ErrorKind::Format,
                    "vocab.json has no \"<unk>\"");
  nlohmann::json fraction = marianVocab();
  fraction["o"] = 2.5;
  writeMarianFolder(dir, fraction);
  test::expectError([&] { MarianVocabulary m(folder); }, ErrorKind::Format,
                    "vocab.json: the id of \"o\" must be a whole number from 0");
  writeMarianFolder(dir, nlohmann::json::array({"<unk>"}));
  test::expectError([&] { MarianVocabulary m(folder); }, ErrorKind::Format,
                    "vocab.json: not a JSON object");
  // Issue 34: invalid JSON is named as such.
  std::ofstream(fs::path(folder) / "vocab.json") << "{\"<unk>\": 0,";
  test::expectError([&] { MarianVocabulary m(folder); }, ErrorKind::Format,
                    "vocab.json: not valid JSON");
  writeMarianFolder(dir, marianVocab());
  fs::remove(fs::path(folder) / "target.spm");
  test::expectError([&] { MarianVocabulary m(folder); }, ErrorKind::Io, "target.spm");
}

}  // namespace marian_vocabulary_test
}  // namespace attnscope
