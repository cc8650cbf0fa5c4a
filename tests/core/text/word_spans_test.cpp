// SPDX-License-Identifier: GPL-3.0-or-later
// Word spans over the tokens of real tokenizers (GPT-2's byte-level BPE, Llama 2's SentencePiece
// BPE and Llama 3's tiktoken-style BPE when ../shared/data is present, the character tokenizer)
// and over hand-made WordPiece tokens, against the words written out by hand.
#include "attnscope/word_spans.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "attnscope/bpe_tokenizer.h"
#include "attnscope/char_tokenizer.h"
#include "attnscope/hf_tokenizer.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

/// The words as the concatenated raw text of their tokens, "|" between words.
std::string joined(const std::vector<Token>& tokens) {
  std::string out;
  for (const WordSpan& w : wordSpans(tokens)) {
    if (!out.empty()) out += "|";
    for (int i = w.first; i <= w.last; ++i) out += tokens[static_cast<std::size_t>(i)].text;
  }
  return out;
}

Token token(std::string text, std::size_t begin, std::size_t end, bool special = false) {
  Token t;
  t.text = std::move(text);
  t.byteBegin = begin;
  t.byteEnd = end;
  t.special = special;
  return t;
}

TEST(WordSpans, WordPieceContinuationsJoinAndGapsSplit) {
  // BERT on "[CLS] playing football, don't [SEP]": HF's WordPiece decoder gives "##" pieces
  // without their marker and every other piece a leading space.
  const std::vector<Token> tokens = {token("[CLS]", 0, 0, true), token("play", 0, 4),
                                     token("ing", 4, 7),         token(" foot", 8, 12),
                                     token("ball", 12, 16),      token(" ,", 16, 17),
                                     token(" don", 18, 21),      token(" '", 21, 22),
                                     token(" t", 22, 23),        token("[SEP]", 0, 0, true)};
  // The apostrophe piece begins with the decoder's space: WordPiece splits it off as its own word.
  EXPECT_EQ(joined(tokens), "[CLS]|playing| football| ,| don| '| t|[SEP]");
  const std::vector<WordSpan> spans = wordSpans(tokens);
  ASSERT_EQ(spans.size(), 8u);
  EXPECT_EQ(spans[1], (WordSpan{1, 2}));
  EXPECT_EQ(spans[2], (WordSpan{3, 4}));
  EXPECT_EQ(spans.back(), (WordSpan{9, 9}));
}

TEST(WordSpans, TokensThatTouchWithoutAWordCharacterStayApart) {
  // A gap in the offsets splits even letters; punctuation never joins; specials stand alone.
  EXPECT_EQ(joined({token("ab", 0, 2), token("cd", 3, 5)}), "ab|cd");
  EXPECT_EQ(joined({token("ab", 0, 2), token("-", 2, 3), token("cd", 3, 5)}), "ab|-|cd");
  EXPECT_EQ(joined({token("<s>", 0, 0, true), token("ab", 0, 2)}), "<s>|ab");
  EXPECT_EQ(joined({token("ab", 0, 2), token("</s>", 2, 2, true)}), "ab|</s>");
  // Tokens without offsets (generated ones) join on their text alone.
  EXPECT_EQ(joined({token(" trans", 0, 0), token("late", 0, 0)}), " translate");
  EXPECT_EQ(wordSpans({}, 0).size(), 0u);
  // Positions beyond the tokens (random input) are one word each.
  EXPECT_EQ(wordSpans({token("ab", 0, 2)}, 3).size(), 3u);
}

TEST(WordSpans, CharacterTokensJoinIntoWords) {
  const std::vector<Token> tokens = CharTokenizer().encode("To be, or not; café\nnaïve");
  EXPECT_EQ(joined(tokens), "To| |be|,| |or| |not|;| |café|\n|naïve");
}

TEST(WordSpans, GptTwoByteLevelBpe) {
  const fs::path dir = fs::path(ATTNSCOPE_SHARED_DATA) / "gpt2";
  if (!fs::exists(dir / "encoder.json")) GTEST_SKIP() << "GPT-2 files not found under " << dir;
  const BpeTokenizer bpe =
      BpeTokenizer::fromFiles((dir / "encoder.json").string(), (dir / "vocab.bpe").string());
  const std::vector<Token> tokens =
      bpe.encode("Tokenization isn't unbelievably hard: 12345 naïve 東京タワー!");
  ASSERT_GT(tokens.size(), 12u) << "the test needs words split into several tokens";
  EXPECT_EQ(joined(tokens),
            "Tokenization| isn't| unbelievably| hard|:| 12345| naïve| 東京タワー|!");
}

TEST(WordSpans, LlamaSentencePieceAndTiktokenBpe) {
  const fs::path root = fs::path(ATTNSCOPE_SHARED_DATA) / "tokenizers";
  int checked = 0;
  for (const char* name : {"llama2", "llama3"}) {
    const fs::path file = root / name / "tokenizer.json";
    if (!fs::exists(file)) continue;
    const HfTokenizer tok = HfTokenizer::fromFile(file.string());
    std::vector<Token> tokens = tok.encode("Tokenization isn't unbelievably hard");
    std::string words;
    for (const WordSpan& w : wordSpans(tokens)) {
      std::string word;
      for (int i = w.first; i <= w.last; ++i) word += tokens[static_cast<std::size_t>(i)].text;
      if (tokens[static_cast<std::size_t>(w.first)].special) continue;  // <s>, <|begin_of_text|>
      while (!word.empty() && word.front() == ' ') word.erase(0, 1);
      words += (words.empty() ? "" : "|") + word;
    }
    EXPECT_EQ(words, "Tokenization|isn't|unbelievably|hard") << name;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no Llama tokenizer under " << root;
}

}  // namespace
}  // namespace attnscope
