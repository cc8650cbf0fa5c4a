// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/byte_level_alphabet.h"

#include <array>

#include "tokenizers/hf/normalized_string.h"

namespace attnscope::hf {
namespace {

struct Alphabet {
  std::array<std::string, 256> charOf;
  std::array<int, 512> byteOf{};
  Alphabet() {
    byteOf.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      appendUtf8(charOf[static_cast<std::size_t>(b)], c);
      byteOf[c] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

const std::string& alphabetCharOfByte(unsigned char byte) { return alphabet().charOf[byte]; }

int byteOfAlphabetChar(char32_t c) { return c < 512 ? alphabet().byteOf[c] : -1; }

}  // namespace attnscope::hf
