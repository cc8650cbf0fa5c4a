// SPDX-License-Identifier: GPL-3.0-or-later
// SentencePieceTokenizer against spm_encode, libsentencepiece's own command-line encoder: the
// reference vectors of tests/data/tokenizers/reference/spm.json for a unigram and a BPE model
// (with byte fallback), byte spans, labels, and malformed model files.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "attnscope/error.h"
#include "attnscope/sentencepiece_tokenizer.h"
#include "expect_error.h"
#include "temp_dir.h"

namespace attnscope {
// Named, not anonymous: unity builds compile this file in one unit with others of its target
// that define the same helper names.
namespace sentencepiece_test {

namespace fs = std::filesystem;
using test::expectError;

std::string readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path tokenizerDir() { return fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers"; }

const nlohmann::json& reference() {
  static const nlohmann::json j =
      nlohmann::json::parse(readAll(tokenizerDir() / "reference" / "spm.json"));
  return j;
}

std::string modelPath(const std::string& name) {
  const std::string source = reference()["models"][name]["model"].get<std::string>();
  EXPECT_EQ(source.rfind("fixture:", 0), 0u) << source;
  return (tokenizerDir() / source.substr(8)).string();
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// A vocabulary string as the bytes it stands for: "▁" as a space, "<0xNN>" as the byte.
std::string pieceBytes(const std::string& piece) {
  if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>')
    return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 3;
    } else {
      out += piece[i++];
    }
  }
  return out;
}

bool onlyWhitespace(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

class SentencePieceReference : public ::testing::TestWithParam<std::string> {};

TEST_P(SentencePieceReference, IdsEqualSpmEncode) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath(GetParam()));
  const nlohmann::json& cases = reference()["models"][GetParam()]["cases"];
  ASSERT_GE(cases.size(), 40u);
  int failed = 0;
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int64_t>>();
    const std::vector<int64_t> ids = tok.encodeIds(text);
    std::vector<int64_t> tokenIds;
    for (const Token& t : tok.encode(text)) tokenIds.push_back(t.id);
    if ((ids != want || tokenIds != want) && ++failed <= 5) {
      std::ostringstream got, exp;
      for (int64_t id : ids) got << id << " ";
      for (int64_t id : want) exp << id << " ";
      ADD_FAILURE() << GetParam() << ": " << nlohmann::json(text).dump() << "\n  got  " << got.str()
                    << "\n  want " << exp.str();
    }
    // The vocabulary agrees both ways with the pieces spm_encode printed.
    const auto pieces = c["pieces"].get<std::vector<std::string>>();
    ASSERT_EQ(pieces.size(), want.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (tok.tokenOf(want[i]).unknown) continue;  // spm_encode prints the unknown text itself
      EXPECT_EQ(tok.pieceToId(pieces[i]), std::optional<int64_t>(want[i])) << pieces[i];
      EXPECT_EQ(tok.tokenOf(want[i]).text, pieceBytes(pieces[i])) << pieces[i];
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << cases.size() << " cases differ from spm_encode";
}

TEST_P(SentencePieceReference, ByteSpansCoverTheTextInOrder) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath(GetParam()));
  for (const nlohmann::json& c : reference()["models"][GetParam()]["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<Token> tokens = tok.encode(text);
    std::size_t previousEnd = 0;
    std::string surfaces, normalized, want;
    for (const Token& t : tokens) {
      EXPECT_LE(t.byteBegin, t.byteEnd) << text;
      EXPECT_LE(t.byteEnd, text.size()) << text;
      EXPECT_GE(t.byteBegin, previousEnd) << text;
      if (t.byteBegin > t.byteEnd || t.byteEnd > text.size()) continue;
      EXPECT_EQ(t.text, text.substr(t.byteBegin, t.byteEnd - t.byteBegin)) << text;
      previousEnd = t.byteEnd;
      surfaces += t.text;
      if (!t.unknown) normalized += tok.tokenOf(t.id).text;
    }
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    const auto pieces = c["pieces"].get<std::vector<std::string>>();
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (!tok.tokenOf(ids[i]).unknown) want += pieceBytes(pieces[i]);
    }
    // What the model saw: the normalized text with SentencePiece's leading space (less the
    // unknown pieces, whose text tokenOf cannot know).
    EXPECT_EQ(normalized, want) << text;
    if (tokens.empty()) {
      EXPECT_TRUE(onlyWhitespace(text)) << text;
      continue;
    }
    // The surfaces are contiguous: together they are the text, less the whitespace that
    // SentencePiece drops at its ends.
    const std::size_t begin = tokens.front().byteBegin, end = tokens.back().byteEnd;
    EXPECT_EQ(surfaces, text.substr(begin, end - begin)) << text;
    EXPECT_TRUE(onlyWhitespace(text.substr(0, begin))) << text;
    EXPECT_TRUE(onlyWhitespace(text.substr(end))) << text;
  }
}

// Labels show "▁" as a space and a character split into byte pieces whole, never "<0xNN>".
TEST_P(SentencePieceReference, LabelsAreReadable) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath(GetParam()));
  for (const nlohmann::json& c : reference()["models"][GetParam()]["cases"]) {
    const std::string text = c["text"].get<std::string>();
    for (const Token& t : tok.encode(text)) {
      EXPECT_FALSE(t.label.empty()) << text;
      EXPECT_FALSE(contains(t.label, "\xE2\x96\x81")) << t.label << " in " << text;
      EXPECT_FALSE(contains(t.label, "<0x")) << t.label << " in " << text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SentencePiece, SentencePieceReference,
                         ::testing::Values("unigram", "spm_bpe"));

TEST(SentencePieceTokenizer, BytePiecesGetOneByteEachAndTheLabelOfTheirCharacter) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath("spm_bpe"));
  const std::string text =
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x82";  // 日本語 🙂
  const std::vector<Token> tokens = tok.encode(text);
  ASSERT_GE(tokens.size(), 4u);
  const std::size_t first = tokens.size() - 4;
  for (std::size_t k = 0; k < 4; ++k) {
    const Token& t = tokens[first + k];
    EXPECT_TRUE(contains(tok.tokenOf(t.id).label, "<0x")) << "expected a byte piece";
    EXPECT_EQ(t.byteBegin, 10 + k);
    EXPECT_EQ(t.byteEnd, 11 + k);
    EXPECT_EQ(t.text, text.substr(10 + k, 1));
    EXPECT_EQ(t.label, "\xF0\x9F\x99\x82");
    EXPECT_FALSE(t.unknown);
  }
  EXPECT_EQ(tokens[first - 1].label, "\xE2\x90\xA3");  // "▁" alone: "␣"
}

TEST(SentencePieceTokenizer, PiecesLabelsAndSpansOfAPlainSentence) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath("unigram"));
  EXPECT_EQ(tok.name(), "sentencepiece");
  const std::vector<Token> tokens = tok.encode("Hello  world");
  std::vector<std::string> labels;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (const Token& t : tokens) {
    labels.push_back(t.label);
    spans.emplace_back(t.byteBegin, t.byteEnd);
  }
  // spm_encode: ▁H ell o ▁ wo r ld; the second space is folded into the "▁" piece's surface.
  EXPECT_EQ(labels, (std::vector<std::string>{"\xE2\x90\xA3H", "ell", "o", "\xE2\x90\xA3", "wo",
                                              "r", "ld"}));
  EXPECT_EQ(spans, (std::vector<std::pair<std::size_t, std::size_t>>{
                       {0, 1}, {1, 4}, {4, 5}, {5, 7}, {7, 9}, {9, 10}, {10, 12}}));
}

TEST(SentencePieceTokenizer, UnknownPiecesAreMarked) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath("unigram"));
  const std::string text = "flags \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7";  // flags 🇫🇷
  const std::vector<Token> tokens = tok.encode(text);
  ASSERT_FALSE(tokens.empty());
  const Token& last = tokens.back();
  EXPECT_TRUE(last.unknown);
  EXPECT_EQ(last.id, 0);
  EXPECT_EQ(last.text, text.substr(6));
  EXPECT_EQ(last.label, text.substr(6));
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) EXPECT_FALSE(tokens[i].unknown);
}

TEST(SentencePieceTokenizer, VocabularyLookups) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath("spm_bpe"));
  EXPECT_EQ(tok.vocabSize(), 600u);
  EXPECT_EQ(tok.pieceToId("<unk>"), std::optional<int64_t>(0));
  EXPECT_EQ(tok.pieceToId("no such piece"), std::nullopt);
  EXPECT_EQ(tok.pieceToId(""), std::nullopt);
  const Token unk = tok.tokenOf(0);
  EXPECT_TRUE(unk.unknown);
  EXPECT_EQ(unk.label, "<unk>");
  EXPECT_EQ(tok.tokenOf(1).label, "<s>");
  EXPECT_FALSE(tok.tokenOf(1).unknown);
  const std::optional<int64_t> newline = tok.pieceToId("<0x0A>");
  ASSERT_TRUE(newline);
  EXPECT_EQ(tok.tokenOf(*newline).text, "\n");
  EXPECT_EQ(tok.tokenOf(*newline).label, "\xE2\x8F\x8E");  // ⏎
  const std::optional<int64_t> the = tok.pieceToId("\xE2\x96\x81the");
  ASSERT_TRUE(the);
  EXPECT_EQ(tok.tokenOf(*the).text, " the");
  EXPECT_EQ(tok.tokenOf(*the).label, "\xE2\x90\xA3the");
  for (int64_t id : {int64_t{-1}, int64_t{600}, int64_t{1} << 40}) {
    const Token t = tok.tokenOf(id);
    EXPECT_TRUE(t.unknown);
    EXPECT_EQ(t.label, "<id " + std::to_string(id) + ">");
  }
}

TEST(SentencePieceTokenizer, InvalidUtf8IsRefused) {
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fromFile(modelPath("unigram"));
  expectError([&] { tok.encode("ok \xC3"); }, ErrorKind::InvalidArgument,
              "invalid UTF-8 at byte 3");
  expectError([&] { tok.encodeIds("\xFF"); }, ErrorKind::InvalidArgument, "invalid UTF-8");
  EXPECT_TRUE(tok.encode("").empty());
  EXPECT_TRUE(tok.encodeIds("").empty());
}

TEST(SentencePieceTokenizer, MalformedFilesAreErrorsNotCrashes) {
  const test::TempDir dir;
  const std::string model = readAll(modelPath("unigram"));
  ASSERT_GT(model.size(), 1000u);

  expectError([&] { SentencePieceTokenizer::fromFile(dir.path("missing.model")); }, ErrorKind::Io,
              "missing.model");
  expectError([&] { SentencePieceTokenizer::fromFile(dir.path("")); }, ErrorKind::Io,
              "Is a directory");

  dir.writeBytes("empty.model", "");
  expectError([&] { SentencePieceTokenizer::fromFile(dir.path("empty.model")); }, ErrorKind::Format,
              "empty.model: empty file");

  std::mt19937 rng(7);
  std::string noise(4096, '\0');
  for (char& ch : noise) ch = static_cast<char>(rng());
  dir.writeBytes("noise.model", noise);
  expectError([&] { SentencePieceTokenizer::fromFile(dir.path("noise.model")); }, ErrorKind::Format,
              "noise.model: not a valid SentencePiece model");

  dir.writeBytes("truncated.model", model.substr(0, model.size() / 2));
  expectError([&] { SentencePieceTokenizer::fromFile(dir.path("truncated.model")); },
              ErrorKind::Format, "truncated, or another kind of file");

  // Valid protobuf, but not a model: SentencePiece's own message comes through.
  dir.writeBytes("text.model", std::string("\x0A\x03"
                                           "abc",
                                           5));
  try {
    SentencePieceTokenizer::fromFile(dir.path("text.model"));
    ADD_FAILURE() << "no error for a ModelProto without a vocabulary";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Format) << e.what();
    EXPECT_TRUE(contains(e.what(), "text.model: not a valid SentencePiece model: ")) << e.what();
  }

  const std::string big = dir.path("big.model");
  std::ofstream(big, std::ios::binary).put('x');
  fs::resize_file(big, SentencePieceTokenizer::kMaxModelBytes + 1);  // sparse, nothing written
  expectError([&] { SentencePieceTokenizer::fromFile(big); }, ErrorKind::Format,
              "too large for a SentencePiece model");

  // Every truncation and a few hundred corrupted copies: an error or a model, never a crash.
  for (std::size_t n = 1; n < model.size(); n += 97) {
    try {
      SentencePieceTokenizer::fromBytes(model.substr(0, n), "cut").encode("Hello world");
    } catch (const Error& e) {
      EXPECT_TRUE(e.kind() == ErrorKind::Format || e.kind() == ErrorKind::Internal) << e.what();
    }
  }
  for (int i = 0; i < 200; ++i) {
    std::string copy = model;
    for (int k = 0; k < 4; ++k) copy[rng() % copy.size()] = static_cast<char>(rng());
    try {
      SentencePieceTokenizer::fromBytes(copy, "flipped")
          .encode("Hello w\xC3\xB6rld \xF0\x9F\x99\x82");
    } catch (const Error& e) {
      EXPECT_TRUE(e.kind() == ErrorKind::Format || e.kind() == ErrorKind::Internal) << e.what();
    }
  }
}

TEST(SentencePieceTokenizer, CopiesShareTheModelAndEncodeFromManyThreads) {
  std::optional<SentencePieceTokenizer> original =
      SentencePieceTokenizer::fromFile(modelPath("spm_bpe"));
  const SentencePieceTokenizer copy = *original;
  original.reset();
  const nlohmann::json& cases = reference()["models"]["spm_bpe"]["cases"];
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (std::size_t w = 0; w < mismatches.size(); ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 5; ++round) {
        for (const nlohmann::json& c : cases) {
          if (copy.encodeIds(c["text"].get<std::string>()) != c["ids"].get<std::vector<int64_t>>())
            ++mismatches[w];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace sentencepiece_test
}  // namespace attnscope
