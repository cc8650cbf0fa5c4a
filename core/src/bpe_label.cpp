// SPDX-License-Identifier: GPL-3.0-or-later
#include "bpe_label.h"

#include <cstddef>

#include "utf8_sequence.h"

namespace attnscope {
namespace {

void appendHexByte(std::string& out, unsigned char b) {
  static const char kDigits[] = "0123456789ABCDEF";
  out += "<0x";
  out += kDigits[b >> 4];
  out += kDigits[b & 0x0F];
  out += '>';
}

}  // namespace

std::string bpeLabel(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() + 4);
  std::size_t i = 0;
  while (i < raw.size()) {
    const auto b = static_cast<unsigned char>(raw[i]);
    char32_t cp = 0;
    // A BPE token can start or end in the middle of a character; those bytes get hex labels.
    const std::size_t len = decodeUtf8Sequence(raw, i, &cp);
    if (len == 0) {
      appendHexByte(out, b);
      i += 1;
      continue;
    }
    if (len == 1) {
      switch (b) {
        case ' ':
          out += "\u2423";
          break;  // ␣
        case '\n':
          out += "\u23CE";
          break;  // ⏎
        case '\t':
          out += "\u21E5";
          break;  // ⇥
        case '\r':
          out += "\u240D";
          break;  // ␍
        default:
          // Other controls would be invisible or break the axis layout.
          if (b < 0x20 || b == 0x7F) {
            appendHexByte(out, b);
          } else {
            out += static_cast<char>(b);
          }
      }
    } else {
      out.append(raw.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace attnscope
