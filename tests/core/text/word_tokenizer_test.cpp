// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "attnscope/error.h"
#include "attnscope/word_tokenizer.h"

namespace attnscope {
namespace {

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  for (const Token& t : WordTokenizer().encode(s)) {
    EXPECT_EQ(s.substr(t.byteBegin, t.byteEnd - t.byteBegin), t.text);
    out.push_back(t.text);
  }
  return out;
}

TEST(WordTokenizer, WordsAndPunctuation) {
  EXPECT_EQ(words("The cat sat, didn't it?"),
            (std::vector<std::string>{"The", "cat", "sat", ",", "didn't", "it", "?"}));
  EXPECT_EQ(words("  spaced\tout\n\nlines  "),
            (std::vector<std::string>{"spaced", "out", "lines"}));
  EXPECT_EQ(words("3.14 isn’t 'quoted'"),
            (std::vector<std::string>{"3", ".", "14", "isn’t", "'", "quoted", "'"}));
}

TEST(WordTokenizer, UnicodeWordsSurvive) {
  EXPECT_EQ(words("naïve café e\xCC\x81t\xC3\xA9"),
            (std::vector<std::string>{"naïve", "café", "e\xCC\x81té"}));
  EXPECT_EQ(words("Привет, мир"), (std::vector<std::string>{"Привет", ",", "мир"}));
  EXPECT_EQ(words("日本語です。"), (std::vector<std::string>{"日", "本", "語", "で", "す", "。"}));
  EXPECT_EQ(words("hi👋🏽there 🇫🇷!"),
            (std::vector<std::string>{"hi", "👋🏽", "there", "🇫🇷", "!"}));
}

TEST(WordTokenizer, SameWordSameId) {
  const auto t = WordTokenizer().encode("the cat and the hat");
  EXPECT_EQ(t[0].id, t[3].id);
  EXPECT_NE(t[0].id, t[1].id);
}

TEST(WordTokenizer, InvalidBytesAreAnError) {
  EXPECT_THROW(WordTokenizer().encode("ok \xC3"), Error);
  EXPECT_TRUE(WordTokenizer().encode("   ").empty());
}

}  // namespace
}  // namespace attnscope
