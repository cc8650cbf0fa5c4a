// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/gpt2_pretokenizer.h"

#include <array>
#include <cstdint>
#include <string>

#include "attnscope/error.h"
#include "text/unicode_tables.h"
#include "text/utf8_sequence.h"

namespace attnscope {
namespace {

// The pattern only distinguishes these four classes (plus a few ASCII bytes looked at directly).
enum class CharClass : std::uint8_t { Letter, Number, Space, Other };

struct ClassifiedChar {
  std::size_t byteBegin;
  CharClass cls;
};

CharClass classify(char32_t cp) {
  if (isUnicodeLetter(cp)) return CharClass::Letter;
  if (isUnicodeNumber(cp)) return CharClass::Number;
  if (isUnicodeWhitespace(cp)) return CharClass::Space;
  return CharClass::Other;
}

// Most text is ASCII; a table keeps the binary searches off that path.
const std::array<CharClass, 128>& asciiClasses() {
  static const std::array<CharClass, 128> table = [] {
    std::array<CharClass, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = classify(c);
    return t;
  }();
  return table;
}

[[noreturn]] void throwInvalidUtf8(std::size_t offset) {
  throw Error(ErrorKind::InvalidArgument,
              "invalid UTF-8 at byte " + std::to_string(offset) + " of text");
}

// Strict UTF-8, because GPT-2's reference only ever sees valid Unicode strings; anything else
// would give byte spans and ids nobody can check.
std::vector<ClassifiedChar> decodeAndClassify(std::string_view text) {
  const auto& ascii = asciiClasses();
  std::vector<ClassifiedChar> chars;
  chars.reserve(text.size() + 1);
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      chars.push_back({i, ascii[b]});
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = decodeUtf8Sequence(text, i, &cp);
    if (len == 0) throwInvalidUtf8(i);
    chars.push_back({i, classify(cp)});
    i += len;
  }
  // A sentinel, so chars[k].byteBegin is the end of the text for k == number of characters.
  chars.push_back({n, CharClass::Other});
  return chars;
}

}  // namespace

std::vector<ByteRange> splitGpt2Pieces(std::string_view text) {
  const std::vector<ClassifiedChar> chars = decodeAndClassify(text);
  const std::size_t n = chars.size() - 1;
  auto runEnd = [&](std::size_t k, CharClass cls) {
    while (k < n && chars[k].cls == cls) ++k;
    return k;
  };
  // Contractions are ASCII, so character and byte offsets agree inside them.
  auto contractionLength = [&](std::size_t k) -> std::size_t {
    const std::string_view rest = text.substr(chars[k].byteBegin + 1);
    if (rest.empty()) return 0;
    const char c = rest[0];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
    if (rest.size() >= 2) {
      const std::string_view two = rest.substr(0, 2);
      if (two == "re" || two == "ve" || two == "ll") return 3;
    }
    return 0;
  };

  std::vector<ByteRange> pieces;
  pieces.reserve(text.size() / 4 + 1);
  std::size_t i = 0;
  while (i < n) {
    const char byte = text[chars[i].byteBegin];
    std::size_t end = 0;
    if (byte == '\'' && contractionLength(i) != 0) {
      end = i + contractionLength(i);
    } else if (byte == ' ' && i + 1 < n && chars[i + 1].cls != CharClass::Space) {
      // " ?\p{L}+", " ?\p{N}+" and " ?[^\s\p{L}\p{N}]+": one ASCII space joins the run after it.
      end = runEnd(i + 1, chars[i + 1].cls);
    } else if (chars[i].cls != CharClass::Space) {
      end = runEnd(i, chars[i].cls);
    } else {
      // "\s+(?!\S)" backtracks off the last whitespace character when a non-space follows, so
      // that character can lead the next piece; a lone whitespace character falls to "\s+".
      const std::size_t spaceEnd = runEnd(i, CharClass::Space);
      end = (spaceEnd < n && spaceEnd - i >= 2) ? spaceEnd - 1 : spaceEnd;
    }
    pieces.push_back({chars[i].byteBegin, chars[end].byteBegin});
    i = end;
  }
  return pieces;
}

}  // namespace attnscope
