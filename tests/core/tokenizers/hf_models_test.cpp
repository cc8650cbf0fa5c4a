// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face's four models (BPE, WordPiece, WordLevel, Unigram) on toy vocabularies whose
// results are worked out by hand from HF's algorithms.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "attnscope/error.h"
#include "expect_error.h"
#include "tokenizers/hf/components.h"

namespace attnscope::hf {
namespace {

using attnscope::test::expectError;

struct Tok {
  int64_t id;
  std::string value;
  std::size_t begin, end;
};

std::unique_ptr<Model> model(const char* json) { return makeModel(nlohmann::json::parse(json)); }

void expectTokens(const Model& m, const std::string& piece, const std::vector<Tok>& want) {
  const std::vector<ModelToken> got = m.tokenize(piece);
  ASSERT_EQ(got.size(), want.size()) << "piece \"" << piece << "\"";
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].id) << "piece \"" << piece << "\" token " << i;
    EXPECT_EQ(got[i].value, want[i].value) << "piece \"" << piece << "\" token " << i;
    EXPECT_EQ(got[i].begin, want[i].begin) << "piece \"" << piece << "\" token " << i;
    EXPECT_EQ(got[i].end, want[i].end) << "piece \"" << piece << "\" token " << i;
  }
}

// ---- BPE ----------------------------------------------------------------------------------------

const char* kToyBpe = R"({"type": "BPE", "dropout": null, "unk_token": "<unk>",
  "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
  "byte_fallback": false, "ignore_merges": false,
  "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "bc": 5, "abc": 6},
  "merges": ["a b", "b c", "ab c"]})";

TEST(HfBpeModel, MergesLowestRankFirst) {
  auto m = model(kToyBpe);
  // a b c: (a,b) rank 0 -> ab; the queued (b,c) is stale; (ab,c) rank 2 -> abc.
  expectTokens(*m, "abc", {{6, "abc", 0, 3}});
  // b c a: only (b,c) merges.
  expectTokens(*m, "bca", {{5, "bc", 0, 2}, {1, "a", 2, 3}});
  expectTokens(*m, "cab", {{3, "c", 0, 1}, {4, "ab", 1, 3}});
  EXPECT_TRUE(m->tokenize("").empty());
  EXPECT_EQ(m->vocabSize(), 7u);
  EXPECT_EQ(m->tokenToId("bc"), 5);
  EXPECT_EQ(m->tokenToId("zz"), std::nullopt);
  EXPECT_EQ(m->idToToken(6), "abc");
  EXPECT_EQ(m->idToToken(7), "");
  EXPECT_EQ(m->idToToken(-1), "");
}

TEST(HfBpeModel, RankOrderBeatsPosition) {
  // (b,c) has the lower rank, so it merges first even though (a,b) is further left.
  auto m = model(R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4},
                     "merges": [["b", "c"], ["a", "b"]]})");
  expectTokens(*m, "abc", {{0, "a", 0, 1}, {4, "bc", 1, 3}});
}

TEST(HfBpeModel, TiesGoToTheLeftmostPair) {
  auto m = model(R"({"type": "BPE", "vocab": {"a": 0, "aa": 1}, "merges": ["a a"]})");
  expectTokens(*m, "aaa", {{1, "aa", 0, 2}, {0, "a", 2, 3}});
  expectTokens(*m, "aaaa", {{1, "aa", 0, 2}, {1, "aa", 2, 4}});
}

TEST(HfBpeModel, UnknownCharactersWithAndWithoutFusing) {
  auto m = model(kToyBpe);
  expectTokens(*m, "abdd", {{4, "ab", 0, 2}, {0, "<unk>", 2, 3}, {0, "<unk>", 3, 4}});
  auto fused = makeModel([] {
    auto j = nlohmann::json::parse(kToyBpe);
    j["fuse_unk"] = true;
    return j;
  }());
  expectTokens(*fused, "abdd", {{4, "ab", 0, 2}, {0, "<unk>", 2, 4}});
  // A multi-byte unknown character: the unk covers its bytes.
  expectTokens(*fused,
               "\xC3\xA9"
               "a",
               {{0, "<unk>", 0, 2}, {1, "a", 2, 3}});
  expectTokens(*fused,
               "d\xC3\xA9"
               "d",
               {{0, "<unk>", 0, 4}});
}

TEST(HfBpeModel, NoUnkTokenDropsUnknownCharacters) {
  // HF adds no symbol for the unknown character, and offsets are running sums of the symbols'
  // lengths, so the tokens after it shift left.
  auto m = model(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []})");
  expectTokens(*m, "axb", {{0, "a", 0, 1}, {1, "b", 1, 2}});
}

TEST(HfBpeModel, UnkTokenOutsideTheVocabularyIsAnErrorWhenNeeded) {
  auto m = model(R"({"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []})");
  expectTokens(*m, "aa", {{0, "a", 0, 1}, {0, "a", 1, 2}});
  expectError([&] { m->tokenize("ax"); }, ErrorKind::InvalidArgument, "<unk>");
}

TEST(HfBpeModel, ByteFallback) {
  auto m = model(R"({"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3, "<0x0A>": 4},
    "merges": []})");
  // é = C3 A9: one token per byte, each covering one byte of the piece.
  expectTokens(*m, "a\xC3\xA9", {{3, "a", 0, 1}, {1, "<0xC3>", 1, 2}, {2, "<0xA9>", 2, 3}});
  expectTokens(*m, "\n", {{4, "<0x0A>", 0, 1}});
  // € = E2 82 AC has no byte tokens: unk, fused over both euros.
  expectTokens(*m, "a\xE2\x82\xAC\xE2\x82\xAC", {{3, "a", 0, 1}, {0, "<unk>", 1, 7}});
}

TEST(HfBpeModel, IgnoreMerges) {
  const char* base = R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "abb": 3},
                         "merges": ["a b"], "ignore_merges": %s})";
  char with[512], without[512];
  std::snprintf(with, sizeof with, base, "true");
  std::snprintf(without, sizeof without, base, "false");
  expectTokens(*model(with), "abb", {{3, "abb", 0, 3}});
  expectTokens(*model(with), "abab", {{2, "ab", 0, 2}, {2, "ab", 2, 4}});
  expectTokens(*model(without), "abb", {{2, "ab", 0, 2}, {1, "b", 2, 3}});
}

TEST(HfBpeModel, ContinuingSubwordPrefix) {
  // Merged tokens are a + b without b's prefix: ("##b","##c") -> "##bc", ("a","##b") -> "ab".
  auto m = model(R"({"type": "BPE", "continuing_subword_prefix": "##",
    "vocab": {"a": 0, "##b": 1, "##c": 2, "##bc": 3, "ab": 4, "b": 5},
    "merges": [["##b", "##c"], ["a", "##b"]]})");
  expectTokens(*m, "abc", {{0, "a", 0, 1}, {3, "##bc", 1, 3}});
  expectTokens(*m, "ab", {{4, "ab", 0, 2}});
  expectTokens(*m, "b", {{5, "b", 0, 1}});
}

TEST(HfBpeModel, EndOfWordSuffix) {
  auto m = model(R"({"type": "BPE", "end_of_word_suffix": "</w>",
    "vocab": {"a": 0, "b": 1, "a</w>": 2, "b</w>": 3, "ab</w>": 4},
    "merges": [["a", "b</w>"]]})");
  expectTokens(*m, "ab", {{4, "ab</w>", 0, 2}});
  expectTokens(*m, "ba", {{1, "b", 0, 1}, {2, "a</w>", 1, 2}});
}

TEST(HfBpeModel, LegacyFilesAndVersionHeader) {
  // No "type": vocab + merges means BPE; a "#version" line is skipped.
  auto m = model(R"({"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["#version: 0.2", "a b"]})");
  expectTokens(*m, "ab", {{2, "ab", 0, 2}});
}

TEST(HfBpeModel, BadMergesAreFormatErrors) {
  expectError([] { model(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]})"); },
              ErrorKind::Format, "\"b\"");
  expectError([] { model(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]})"); },
              ErrorKind::Format, "\"ab\"");
  expectError([] { model(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a a a"]})"); },
              ErrorKind::Format, "merges[0]");
  expectError([] { model(R"({"type": "BPE", "vocab": {"a": -1}, "merges": []})"); },
              ErrorKind::Format, "vocab");
  expectError([] { model(R"({"type": "BPE", "vocab": {"a": 0}})"); }, ErrorKind::Format, "merges");
  expectError([] { model(R"({"type": "BPE", "vocab": {"a": 4000000000}, "merges": []})"); },
              ErrorKind::Format, "far beyond");
}

TEST(HfBpeModel, CacheIsConsistentAcrossThreads) {
  auto m = model(kToyBpe);
  const std::vector<std::string> words = {"abc", "bca", "cab", "abdd", "ccc", "ababab"};
  std::vector<std::vector<ModelToken>> want;
  for (const auto& w : words) want.push_back(m->tokenize(w));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 2000; ++rep) {
        const std::size_t k = static_cast<std::size_t>(rep + t) % words.size();
        const std::string w = words[k] + (rep % 3 == 0 ? std::to_string(rep) : "");
        auto got = m->tokenize(words[k]);
        m->tokenize(w);  // fills the cache with new entries meanwhile
        if (got.size() != want[k].size()) ++bad[t];
        for (std::size_t i = 0; i < got.size() && i < want[k].size(); ++i) {
          if (got[i].id != want[k][i].id || got[i].end != want[k][i].end) ++bad[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int b : bad) EXPECT_EQ(b, 0);
}

// ---- WordPiece ----------------------------------------------------------------------------------

const char* kToyWordPiece = R"({"type": "WordPiece", "unk_token": "[UNK]",
  "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
  "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "u": 4, "##n": 5, "a": 6,
            "\u00e9": 7, "##\u00e9": 8, "##a": 9}})";

TEST(HfWordPieceModel, GreedyLongestMatchFirst) {
  auto m = model(kToyWordPiece);
  expectTokens(*m, "unaffable", {{1, "un", 0, 2}, {2, "##aff", 2, 5}, {3, "##able", 5, 9}});
  expectTokens(*m, "una", {{1, "un", 0, 2}, {9, "##a", 2, 3}});
  expectTokens(*m, "\xC3\xA9\xC3\xA9", {{7, "\xC3\xA9", 0, 2}, {8, "##\xC3\xA9", 2, 4}});
  EXPECT_TRUE(m->tokenize("").empty());
  EXPECT_EQ(m->vocabSize(), 10u);
  EXPECT_EQ(m->idToToken(3), "##able");
}

TEST(HfWordPieceModel, AnUnmatchablePartMakesTheWholeWordUnk) {
  auto m = model(kToyWordPiece);
  expectTokens(*m, "unx", {{0, "[UNK]", 0, 3}});
  expectTokens(*m, "x", {{0, "[UNK]", 0, 1}});
}

TEST(HfWordPieceModel, MaxInputCharsCountsCharacters) {
  auto j = nlohmann::json::parse(kToyWordPiece);
  j["max_input_chars_per_word"] = 2;
  auto m = makeModel(j);
  expectTokens(*m, "\xC3\xA9\xC3\xA9", {{7, "\xC3\xA9", 0, 2}, {8, "##\xC3\xA9", 2, 4}});
  expectTokens(*m, "una", {{0, "[UNK]", 0, 3}});
}

TEST(HfWordPieceModel, DefaultsAndMissingUnk) {
  // Absent fields take HF's defaults: "[UNK]", "##", 100.
  auto m = model(R"({"type": "WordPiece", "vocab": {"a": 0, "##b": 1}})");
  expectTokens(*m, "ab", {{0, "a", 0, 1}, {1, "##b", 1, 2}});
  expectError([&] { m->tokenize("c"); }, ErrorKind::InvalidArgument, "[UNK]");
}

// ---- WordLevel ----------------------------------------------------------------------------------

TEST(HfWordLevelModel, LookupOrUnk) {
  auto m = model(R"({"type": "WordLevel", "vocab": {"<unk>": 0, "hello": 1, "world": 3},
                     "unk_token": "<unk>"})");
  expectTokens(*m, "hello", {{1, "hello", 0, 5}});
  expectTokens(*m, "bye", {{0, "<unk>", 0, 3}});
  EXPECT_EQ(m->vocabSize(), 4u);  // one more than the largest id
  EXPECT_EQ(m->idToToken(2), "");
  EXPECT_EQ(m->idToToken(3), "world");

  auto noUnk = model(R"({"type": "WordLevel", "vocab": {"hello": 0}, "unk_token": "<unk>"})");
  expectError([&] { noUnk->tokenize("bye"); }, ErrorKind::InvalidArgument, "bye");
}

// ---- Unigram ------------------------------------------------------------------------------------

const char* kToyUnigram = R"({"type": "Unigram", "unk_id": 0, "byte_fallback": false,
  "vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["c", -1.0], ["ab", -1.5],
            ["abc", -5.0], ["bc", -0.5]]})";

TEST(HfUnigramModel, ViterbiPicksTheBestScoreNotTheLongestPiece) {
  auto m = model(kToyUnigram);
  // abc -5, ab+c -2.5, a+b+c -3, a+bc -1.5.
  expectTokens(*m, "abc", {{1, "a", 0, 1}, {6, "bc", 1, 3}});
  // ab -1.5 beats a+b -2.
  expectTokens(*m, "ab", {{4, "ab", 0, 2}});
  EXPECT_TRUE(m->tokenize("").empty());
  EXPECT_EQ(m->vocabSize(), 7u);
  EXPECT_EQ(m->tokenToId("bc"), 6);
  EXPECT_EQ(m->idToToken(5), "abc");
}

TEST(HfUnigramModel, TiesKeepTheFirstPath) {
  // ab -2 equals a+b -2: the path found first (ab, from position 0) stays.
  auto m = model(R"({"type": "Unigram", "unk_id": 0,
    "vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["ab", -2.0]]})");
  expectTokens(*m, "ab", {{3, "ab", 0, 2}});
}

TEST(HfUnigramModel, UnknownCharactersFuseAndKeepTheirText) {
  auto m = model(kToyUnigram);
  // x and y are unknown (score min - 10 = -15 each): one fused unk whose value is the text.
  expectTokens(*m, "xyab", {{0, "xy", 0, 2}, {4, "ab", 2, 4}});
  expectTokens(*m,
               "a\xC3\xA9"
               "b",
               {{1, "a", 0, 1}, {0, "\xC3\xA9", 1, 3}, {2, "b", 3, 4}});
  expectTokens(*m, "xax", {{0, "x", 0, 1}, {1, "a", 1, 2}, {0, "x", 2, 3}});
}

TEST(HfUnigramModel, ByteFallback) {
  auto m = model(R"({"type": "Unigram", "unk_id": 0, "byte_fallback": true,
    "vocab": [["<unk>", 0.0], ["a", -1.0], ["<0xC3>", -2.0], ["<0xA9>", -2.0]]})");
  // Every byte token of an unknown run has the offsets of the whole run.
  expectTokens(*m, "a\xC3\xA9", {{1, "a", 0, 1}, {2, "<0xC3>", 1, 3}, {3, "<0xA9>", 1, 3}});
  expectTokens(
      *m, "\xC3\xA9\xC3\xA9",
      {{2, "<0xC3>", 0, 4}, {3, "<0xA9>", 0, 4}, {2, "<0xC3>", 0, 4}, {3, "<0xA9>", 0, 4}});
  // x has no byte token: the run stays one unk.
  expectTokens(*m, "xa", {{0, "x", 0, 1}, {1, "a", 1, 2}});
}

TEST(HfUnigramModel, Errors) {
  auto noUnk = model(R"({"type": "Unigram", "unk_id": null, "vocab": [["a", -1.0]]})");
  expectTokens(*noUnk, "aa", {{0, "a", 0, 1}, {0, "a", 1, 2}});
  expectError([&] { noUnk->tokenize("ax"); }, ErrorKind::InvalidArgument, "unk_id");
  expectError([] { model(R"({"type": "Unigram", "unk_id": 3, "vocab": [["a", -1.0]]})"); },
              ErrorKind::Format, "unk_id");
  expectError([] { model(R"({"type": "Unigram", "vocab": [["a"]]})"); }, ErrorKind::Format,
              "vocab[0]");
}

// ---- makeModel ----------------------------------------------------------------------------------

TEST(HfMakeModel, DispatchAndErrors) {
  expectError([] { model(R"({"type": "Foo", "vocab": {}})"); }, ErrorKind::Format,
              "type \"Foo\" is not supported; supported: BPE, Unigram, WordLevel, WordPiece");
  // Without "type": a vocab array is Unigram, an object with unk_token WordLevel.
  expectTokens(*model(R"({"unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]})"), "a",
               {{1, "a", 0, 1}});
  expectTokens(*model(R"({"unk_token": "<unk>", "vocab": {"<unk>": 0, "a": 1}})"), "b",
               {{0, "<unk>", 0, 1}});
  expectTokens(*model(R"({"unk_token": "[UNK]", "continuing_subword_prefix": "##",
                          "max_input_chars_per_word": 100, "vocab": {"a": 0, "##a": 1}})"),
               "aa", {{0, "a", 0, 1}, {1, "##a", 1, 2}});
}

}  // namespace
}  // namespace attnscope::hf
