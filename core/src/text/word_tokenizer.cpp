// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/word_tokenizer.h"

#include "attnscope/utf8.h"
#include "text/token_hash.h"

namespace attnscope {
namespace {

bool isSpace(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// ASCII punctuation and the general punctuation / symbol blocks stand alone; everything else
// (letters of any script, digits, CJK, emoji) forms words. CJK ideographs are split one per
// token because those scripts do not separate words with spaces.
bool isPunctuation(char32_t c) {
  if (c < 0x80)
    return !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
             c == '_');
  return (c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E) ||
         (c >= 0x3001 && c <= 0x3003) || (c >= 0x3008 && c <= 0x3011) ||
         (c >= 0xFF01 && c <= 0xFF0F) || c == 0xA1 || c == 0xBF || c == 0xAB || c == 0xBB;
}

bool standsAlone(char32_t c) {
  return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x9FFF) ||
         (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0x1F000 && c <= 0x1FAFF) ||
         (c >= 0x2600 && c <= 0x27BF) || (c >= 0x1F1E6 && c <= 0x1F1FF);
}

}  // namespace

std::vector<Token> WordTokenizer::encode(const std::string& text) const {
  const std::vector<CodePoint> cps = decodeUtf8(text);
  std::vector<Token> tokens;
  const auto emit = [&](std::size_t from, std::size_t to) {
    Token t;
    t.byteBegin = cps[from].byteBegin;
    t.byteEnd = cps[to - 1].byteEnd;
    t.text = text.substr(t.byteBegin, t.byteEnd - t.byteBegin);
    t.id = tokenHashId(t.text);
    t.label = readableLabel(t.text);
    tokens.push_back(std::move(t));
  };
  const auto extend = [&](std::size_t j) {
    while (j < cps.size() && (isExtendingCodePoint(cps[j].value) || cps[j - 1].value == 0x200D))
      ++j;
    return j;
  };
  for (std::size_t i = 0; i < cps.size();) {
    const char32_t c = cps[i].value;
    if (isSpace(c)) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    if (isPunctuation(c) || standsAlone(c)) {
      j = extend(j);
      if (c >= 0x1F1E6 && c <= 0x1F1FF && j < cps.size() && cps[j].value >= 0x1F1E6 &&
          cps[j].value <= 0x1F1FF) {
        ++j;  // a flag is one token
      }
    } else {
      for (;;) {
        j = extend(j);
        if (j >= cps.size()) break;
        const char32_t n = cps[j].value;
        // An apostrophe inside a word stays in it: "don't", "l'homme".
        const bool innerApostrophe =
            (n == '\'' || n == 0x2019) && j + 1 < cps.size() && !isSpace(cps[j + 1].value) &&
            !isPunctuation(cps[j + 1].value) && !standsAlone(cps[j + 1].value);
        if (isSpace(n) || standsAlone(n) || (isPunctuation(n) && !innerApostrophe)) break;
        ++j;
      }
    }
    emit(i, j);
    i = j;
  }
  return tokens;
}

}  // namespace attnscope
