// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope::test {

/// GPT-2's bytes_to_unicode (encoder.py), written again for the tests rather than shared with the
/// code under test: the UTF-8 symbol that stands for one byte in vocab.json and merges.txt.
inline std::string gpt2ByteSymbol(unsigned char b) {
  int shifted = 0;
  for (int c = 0; c < 256; ++c) {
    const bool printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
    if (c == b) {
      const int cp = printable ? c : 256 + shifted;
      if (cp < 0x80) return std::string(1, static_cast<char>(cp));
      return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    if (!printable) ++shifted;
  }
  return {};
}

/// The symbols of a byte string, as BPE vocabularies spell it.
inline std::string gpt2Symbols(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) out += gpt2ByteSymbol(b);
  return out;
}

}  // namespace attnscope::test
