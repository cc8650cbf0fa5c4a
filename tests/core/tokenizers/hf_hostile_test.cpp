// SPDX-License-Identifier: GPL-3.0-or-later
// Hostile tokenizer.json files (issue 34): nesting that overflowed the stack, regex searches that
// gave up silently, and malformed JSON named as such. Each case is small and refuses at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/hf_tokenizer.h"
#include "expect_error.h"

namespace attnscope {
namespace {

using test::expectError;

/// A WordLevel tokenizer over single characters, with `parts` (",\"normalizer\": {...}" and the
/// like) added to the top-level object.
std::string tokenizerJson(const std::string& parts) {
  return R"({"model": {"type": "WordLevel", "unk_token": "?",
    "vocab": {"?": 0, "a": 1, "b": 2, "c": 3, "!": 4, " ": 5, "aaaa": 6}})" +
         parts + "}";
}

/// `levels` Sequences inside each other around `leaf`, under the component's `listKey`.
std::string nestedSequence(int levels, const std::string& listKey, const std::string& leaf) {
  std::string open, close;
  for (int i = 0; i < levels; ++i) {
    open += R"({"type": "Sequence", ")" + listKey + R"(": [)";
    close += "]}";
  }
  return open + leaf + close;
}

TEST(HfHostile, DeeplyNestedJsonIsRefusedBeforeTheFactories) {
  // 50,000 Sequences overflowed the stack in the recursive factories (SIGSEGV).
  const std::string json = tokenizerJson(
      R"(, "normalizer": )" + nestedSequence(50000, "normalizers", R"({"type": "Lowercase"})"));
  expectError([&] { HfTokenizer::fromJson(json, "deep.json"); }, ErrorKind::Format,
              "deep.json: JSON nested more than 128 levels deep");
  // Deep arrays where a component belongs: json::dump in the message would recurse as deep.
  const std::string arrays =
      tokenizerJson(R"(, "decoder": )" + std::string(200000, '[') + std::string(200000, ']'));
  expectError([&] { HfTokenizer::fromJson(arrays, "arrays.json"); }, ErrorKind::Format,
              "nested more than 128 levels deep");
}

TEST(HfHostile, SequenceNestingIsLimitedInEveryComponent) {
  struct Case {
    const char* key;
    const char* listKey;
    const char* leaf;
  };
  const Case cases[] = {
      {"normalizer", "normalizers", R"({"type": "Lowercase"})"},
      {"pre_tokenizer", "pretokenizers", R"({"type": "Whitespace"})"},
      {"decoder", "decoders", R"({"type": "Fuse"})"},
      {"post_processor", "processors", R"({"type": "ByteLevel", "trim_offsets": false})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    // 33 levels fit in the JSON depth limit (2 JSON levels each) but not in the Sequence limit.
    const std::string deep = tokenizerJson(std::string(R"(, ")") + c.key + R"(": )" +
                                           nestedSequence(33, c.listKey, c.leaf));
    expectError([&] { HfTokenizer::fromJson(deep, "t.json"); }, ErrorKind::Format,
                std::string(c.key) + ": Sequence nested more than 32 levels deep");
    // 32 levels still load and work.
    const std::string ok = tokenizerJson(std::string(R"(, ")") + c.key + R"(": )" +
                                         nestedSequence(32, c.listKey, c.leaf));
    EXPECT_FALSE(HfTokenizer::fromJson(ok, "t.json").encodeIds("ab").ids.empty());
  }
}

TEST(HfHostile, RegexThatGivesUpIsAnErrorNotTheEndOfTheMatches) {
  // (a+)+b backtracks exponentially on a run of a's without a b: Oniguruma stops at its retry
  // limit. Treating that as "no more matches" left "c" unsplit, silently.
  const std::string json = tokenizerJson(
      R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a+)+b|c"},
          "behavior": "Isolated", "invert": false})");
  const HfTokenizer tok = HfTokenizer::fromJson(json, "split.json");
  EXPECT_EQ(tok.encodeIds("ab c").ids.size(), 3u);  // "ab", " ", "c": the pattern works
  expectError([&] { tok.encodeIds(std::string(40, 'a') + "! c"); }, ErrorKind::Format,
              "regex /(a+)+b|c/ gave up on this text: retry-limit-in-match over");
}

// Settings that made memory or time grow far beyond the text: each must finish at once.
TEST(HfHostile, ReplaceThatBlowsTheTextUpIsRefused) {
  const std::string json = tokenizerJson(
      R"(, "normalizer": {"type": "Replace", "pattern": {"String": "a"}, "content": ")" +
      std::string(100000, 'b') + R"("})");
  const HfTokenizer tok = HfTokenizer::fromJson(json, "replace.json");
  // 100k "a" would become 10 GB of text (4.1 GB peak before it was refused).
  expectError([&] { tok.encodeIds(std::string(100000, 'a')); }, ErrorKind::ResourceLimit,
              "normalizer: Replace would make the text 10000000000 bytes long");
  EXPECT_EQ(tok.encodeIds("a").ids.size(), 1u);  // 100 kB from one byte is within the bound
}

TEST(HfHostile, ManyAddedTokensMatchInTimeLinearInTheText) {
  // 3,000 added tokens sharing a prefix, on 120k characters of that prefix's byte: each position
  // compared every token (26 s in the report). Only the end of the text is a token, "<x64>7".
  const std::string prefix(64, 'x');
  std::string added;
  for (int i = 0; i < 3000; ++i)
    added += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(10 + i) +
             R"(, "content": ")" + prefix + std::to_string(i) + R"(", "special": true})";
  const HfTokenizer tok =
      HfTokenizer::fromJson(tokenizerJson(R"(, "added_tokens": [)" + added + "]"), "added.json");
  const std::string text = std::string(120000, 'x') + "7";
  const auto start = std::chrono::steady_clock::now();
  const HfEncoding e = tok.encodeIds(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(e.ids.size(), 2u);  // the x's before it (one unknown piece), then the token
  EXPECT_EQ(e.ids[1], 17);
  EXPECT_LT(seconds, 3.0);
  // Leftmost-longest: "<x64>12" is one token, not "<x64>1" and "2".
  const HfEncoding twelve = tok.encodeIds("a" + prefix + "12a");
  ASSERT_EQ(twelve.ids.size(), 3u);
  EXPECT_EQ(twelve.ids[1], 22);
}

TEST(HfHostile, LongAddedTokensMatchInTimeLinearInTheText) {
  // Tokens that are long prefixes of the text at every position: a trie walked forward from each
  // position cost the longest token's length there. One 100 kB token on 120k characters took
  // 49 s, 3,000 single_word tokens x, xx, ... 23 s (1,000 here). Only "<x100000>7" may stand: the
  // single_word ones have no word boundary after them, and none before them after the first
  // position.
  std::string added =
      R"({"id": 10, "content": ")" + std::string(100000, 'x') + R"(7", "special": true})";
  for (int i = 1; i <= 1000; ++i)
    added += R"(, {"id": )" + std::to_string(10 + i) + R"(, "content": ")" + std::string(i, 'x') +
             R"(", "single_word": true, "special": true})";
  const HfTokenizer tok =
      HfTokenizer::fromJson(tokenizerJson(R"(, "added_tokens": [)" + added + "]"), "added.json");
  const auto start = std::chrono::steady_clock::now();
  const HfEncoding e = tok.encodeIds(std::string(120000, 'x') + "7");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(e.ids.size(), 2u);  // 20,000 x's (one unknown piece), then the long token
  EXPECT_EQ(e.ids[0], 0);
  EXPECT_EQ(e.ids[1], 10);
  EXPECT_LT(seconds, 3.0);
  // With word boundaries on both sides the longest single_word token stands; with a word
  // character after every one, none does (the text is one unknown piece).
  EXPECT_EQ(tok.encodeIds(" xx ").ids, (std::vector<int64_t>{5, 12, 5}));
  EXPECT_EQ(tok.encodeIds(" xxxa").ids, (std::vector<int64_t>{0}));
  EXPECT_EQ(tok.encodeIds("!xxx!").ids, (std::vector<int64_t>{4, 13, 4}));
}

TEST(HfHostile, LongWordPieceWordsAreLinear) {
  // max_input_chars_per_word 1e9 lets a 200k-character word through to the model, whose search
  // for the longest vocabulary entry walked back over the whole rest of the word at every token.
  const std::string json = R"({"model": {"type": "WordPiece", "unk_token": "[UNK]",
      "continuing_subword_prefix": "##", "max_input_chars_per_word": 1000000000,
      "vocab": {"[UNK]": 0, "a": 1, "##a": 2}}})";
  const HfTokenizer tok = HfTokenizer::fromJson(json, "wordpiece.json");
  const auto start = std::chrono::steady_clock::now();
  const HfEncoding e = tok.encodeIds(std::string(200000, 'a'));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(e.ids.size(), 200000u);
  EXPECT_EQ(e.ids.front(), 1);
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), 2), 199999);
  EXPECT_LT(seconds, 5.0);
}

TEST(HfHostile, InvalidJsonAndUtf8AreNamedAsSuch) {
  expectError([&] { HfTokenizer::fromJson(R"({"model": )", "cut.json"); }, ErrorKind::Format,
              "cut.json: not valid JSON (byte");
  expectError([&] { HfTokenizer::fromJson("{\"model\": \"\xff\"}", "bytes.json"); },
              ErrorKind::Format, "bytes.json: not valid JSON");
  expectError([&] { HfTokenizer::fromJson("[1, 2]", "list.json"); }, ErrorKind::Format,
              "list.json: not a JSON object");
}

}  // namespace
}  // namespace attnscope
