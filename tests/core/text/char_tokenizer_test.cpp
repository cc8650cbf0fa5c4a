// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "attnscope/char_tokenizer.h"
#include "attnscope/error.h"

namespace attnscope {
namespace {

std::vector<std::string> texts(const std::vector<Token>& tokens) {
  std::vector<std::string> out;
  for (const Token& t : tokens) out.push_back(t.text);
  return out;
}

// Concatenating the tokens must give back the input exactly, and spans must tile it.
void expectTiles(const std::string& input, const std::vector<Token>& tokens) {
  std::string joined;
  std::size_t at = 0;
  for (const Token& t : tokens) {
    EXPECT_EQ(t.byteBegin, at);
    EXPECT_EQ(input.substr(t.byteBegin, t.byteEnd - t.byteBegin), t.text);
    at = t.byteEnd;
    joined += t.text;
  }
  EXPECT_EQ(joined, input);
}

TEST(CharTokenizer, OneTokenPerCharacterWithCodePointIds) {
  const std::string s = "héllo 日本";
  const auto tokens = CharTokenizer().encode(s);
  EXPECT_EQ(texts(tokens), (std::vector<std::string>{"h", "é", "l", "l", "o", " ", "日", "本"}));
  EXPECT_EQ(tokens[1].id, 0xE9);
  EXPECT_EQ(tokens[6].id, 0x65E5);
  EXPECT_EQ(tokens[5].label, "\u2423");
  expectTiles(s, tokens);
}

TEST(CharTokenizer, KeepsCombiningMarksEmojiSequencesAndFlagsTogether) {
  const std::string decomposed = "e\xCC\x81";    // e + combining acute
  const std::string family = "👩\u200D👩\u200D👧";  // ZWJ sequence
  const std::string thumbs = "👍🏽";         // skin-tone modifier
  const std::string flag = "🇫🇷";                 // regional indicators
  const std::string keycap = "1\uFE0F\u20E3";    // keycap sequence
  const std::string s = "a" + decomposed + family + thumbs + flag + keycap + "z";
  const auto tokens = CharTokenizer().encode(s);
  EXPECT_EQ(texts(tokens),
            (std::vector<std::string>{"a", decomposed, family, thumbs, flag, keycap, "z"}));
  expectTiles(s, tokens);
  // Clusters get a stable hash id outside the code-point range.
  EXPECT_GT(tokens[1].id, 0x10FFFF);
  EXPECT_EQ(tokens[1].id, CharTokenizer().encode(decomposed)[0].id);
}

TEST(CharTokenizer, InvalidBytesAreAnError) {
  EXPECT_THROW(CharTokenizer().encode("abc\xFF"), Error);
  EXPECT_TRUE(CharTokenizer().encode("").empty());
}

}  // namespace
}  // namespace attnscope
