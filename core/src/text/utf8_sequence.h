// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string_view>

namespace attnscope {

/// Length of the strict UTF-8 sequence starting at text[i] (no overlong forms, surrogates or code
/// points above U+10FFFF), storing its code point in *cp; 0 if the bytes there are not one
/// complete valid character. The one strict decoder of the core: utf8.cpp (and through it the
/// tokenizers, labels and the safetensors reader) and the BPE pre-tokeniser use it. Inline
/// because the pre-tokeniser calls it for every non-ASCII character.
inline std::size_t decodeUtf8Sequence(std::string_view text, std::size_t i, char32_t* cp) {
  const auto b = static_cast<unsigned char>(text[i]);
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  std::size_t len = 0;
  char32_t value = 0;
  unsigned char lo = 0x80;  // allowed range of the second byte
  unsigned char hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
    value = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    value = b & 0x0F;
    if (b == 0xE0) lo = 0xA0;  // overlong
    if (b == 0xED) hi = 0x9F;  // surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    value = b & 0x07;
    if (b == 0xF0) lo = 0x90;  // overlong
    if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(text[i + k]);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return 0;
    value = (value << 6) | (c & 0x3F);
  }
  *cp = value;
  return len;
}

}  // namespace attnscope
