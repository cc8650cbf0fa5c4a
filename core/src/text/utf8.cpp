// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/utf8.h"

#include <cstdio>

#include "attnscope/error.h"
#include "text/utf8_sequence.h"

namespace attnscope {

bool isValidUtf8(std::string_view text, std::size_t* badOffset) {
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp;
    const std::size_t n = decodeUtf8Sequence(text, i, &cp);
    if (n == 0) {
      if (badOffset) *badOffset = i;
      return false;
    }
    i += n;
  }
  return true;
}

void requireValidUtf8(std::string_view text, const std::string& what) {
  std::size_t bad = 0;
  if (!isValidUtf8(text, &bad)) {
    throw Error(ErrorKind::InvalidArgument,
                "invalid UTF-8 at byte " + std::to_string(bad) + " of " + what);
  }
}

std::vector<CodePoint> decodeUtf8(std::string_view text, const std::string& what) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t cp;
    const std::size_t n = decodeUtf8Sequence(text, i, &cp);
    if (n == 0) {
      throw Error(ErrorKind::InvalidArgument,
                  "invalid UTF-8 at byte " + std::to_string(i) + " of " + what);
    }
    out.push_back({cp, i, i + n});
    i += n;
  }
  return out;
}

std::string encodeUtf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool isExtendingCodePoint(char32_t cp) {
  // The common combining blocks; enough to keep accents, Indic vowel signs, emoji modifiers and
  // variation selectors on their base character without a full grapheme table.
  return (cp >= 0x0300 && cp <= 0x036F) ||  // combining diacritical marks
         (cp >= 0x0483 && cp <= 0x0489) ||  // Cyrillic combining
         (cp >= 0x0591 && cp <= 0x05BD) ||  // Hebrew points
         (cp >= 0x0610 && cp <= 0x061A) || (cp >= 0x064B && cp <= 0x065F) ||  // Arabic marks
         (cp >= 0x0900 && cp <= 0x0903) || (cp >= 0x093A && cp <= 0x094F) ||  // Devanagari signs
         (cp >= 0x0E31 && cp <= 0x0E3A && cp != 0x0E32 && cp != 0x0E33) ||    // Thai vowels
         (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x1DC0 && cp <= 0x1DFF) ||
         (cp >= 0x20D0 && cp <= 0x20FF) ||    // combining marks for symbols (keycaps)
         (cp >= 0x3099 && cp <= 0x309A) ||    // kana voicing marks
         (cp >= 0xFE00 && cp <= 0xFE0F) ||    // variation selectors
         (cp >= 0xFE20 && cp <= 0xFE2F) ||    // combining half marks
         (cp >= 0x1F3FB && cp <= 0x1F3FF) ||  // emoji skin tones
         (cp >= 0xE0020 && cp <= 0xE007F) ||  // tag characters (subdivision flags)
         (cp >= 0xE0100 && cp <= 0xE01EF) ||  // variation selectors supplement
         cp == 0x200D;                        // zero-width joiner
}

std::string readableLabel(std::string_view raw) {
  std::string out;
  char hex[8];
  for (std::size_t i = 0; i < raw.size();) {
    char32_t cp;
    const std::size_t n = decodeUtf8Sequence(raw, i, &cp);
    if (n == 0) {
      std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned char>(raw[i]));
      out += hex;
      ++i;
      continue;
    }
    if (cp == ' ') {
      out += "\u2423";  // ␣
    } else if (cp == '\n') {
      out += "\u23CE";  // ⏎
    } else if (cp == '\t') {
      out += "\u21E5";  // ⇥
    } else if (cp == '\r') {
      out += "\u240D";  // ␍
    } else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned>(cp));
      out += hex;
    } else {
      out.append(raw.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace attnscope
