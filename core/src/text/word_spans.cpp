// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/word_spans.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "attnscope/utf8.h"
#include "text/unicode_tables.h"
#include "text/utf8_sequence.h"

namespace attnscope {
namespace {

/// The code points of the sequence's text (every token's text, one after another). A byte that is
/// not part of a valid character is one character of its own (U+FFFD).
struct Characters {
  std::vector<char32_t> values;
  std::vector<std::size_t> begins;  // [characters] where each starts in the joined text
  std::vector<int> at;              // [bytes] the character each byte belongs to

  explicit Characters(std::string_view text) : at(text.size()) {
    for (std::size_t i = 0; i < text.size();) {
      char32_t cp = 0xFFFD;
      const std::size_t n = std::max<std::size_t>(1, decodeUtf8Sequence(text, i, &cp));
      for (std::size_t k = 0; k < n; ++k) at[i + k] = static_cast<int>(values.size());
      values.push_back(cp);
      begins.push_back(i);
      i += n;
    }
  }
  char32_t value(int c) const {
    return c >= 0 && c < static_cast<int>(values.size()) ? values[static_cast<std::size_t>(c)] : 0;
  }
};

bool isApostrophe(char32_t cp) { return cp == U'\'' || cp == U'\u2019'; }

/// Letters, digits and combining marks; an apostrophe between two letters ("don't") too.
bool isWordCharacter(const Characters& chars, int c) {
  const char32_t cp = chars.value(c);
  if (isUnicodeLetter(cp) || isUnicodeNumber(cp) || isExtendingCodePoint(cp)) return true;
  return isApostrophe(cp) && isUnicodeLetter(chars.value(c - 1)) &&
         isUnicodeLetter(chars.value(c + 1));
}

bool hasOffsets(const Token& t) { return t.byteEnd > t.byteBegin; }

}  // namespace

std::vector<WordSpan> wordSpans(const std::vector<Token>& tokens, int count) {
  const int n = count < 0 ? static_cast<int>(tokens.size()) : count;
  const int known = std::min(n, static_cast<int>(tokens.size()));
  std::string text;
  std::vector<std::size_t> starts;  // [known] where each token's text begins in `text`
  for (int i = 0; i < known; ++i) {
    starts.push_back(text.size());
    text += tokens[static_cast<std::size_t>(i)].text;
  }
  const Characters chars(text);
  const auto continuesWord = [&](int i) {
    const Token& prev = tokens[static_cast<std::size_t>(i - 1)];
    const Token& next = tokens[static_cast<std::size_t>(i)];
    if (prev.special || next.special || prev.text.empty() || next.text.empty()) return false;
    // Something (a space a WordPiece tokenizer dropped) lies between them in the input.
    if (hasOffsets(prev) && hasOffsets(next) && next.byteBegin > prev.byteEnd) return false;
    const std::size_t start = starts[static_cast<std::size_t>(i)];
    const int c = chars.at[start];
    // Byte-level BPE splits a character across tokens: those bytes are one character.
    if (chars.begins[static_cast<std::size_t>(c)] < start) return true;
    if (isUnicodeWhitespace(chars.value(c))) return false;
    return isWordCharacter(chars, c - 1) && isWordCharacter(chars, c);
  };
  std::vector<WordSpan> spans;
  for (int i = 0; i < n; ++i) {
    if (i > 0 && i < known && continuesWord(i)) {
      spans.back().last = i;
    } else {
      spans.push_back({i, i});  // positions without a token (random input) stand alone
    }
  }
  return spans;
}

}  // namespace attnscope
