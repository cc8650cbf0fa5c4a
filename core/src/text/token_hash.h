// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string_view>

namespace attnscope {

/// A stable 31-bit FNV-1a hash of a token's bytes, offset past the Unicode range so that it never
/// equals a single code point's id. Used as the id of words and multi-code-point characters.
inline int64_t tokenHashId(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return 0x110000 + static_cast<int64_t>(h % (0x7FFFFFFFull - 0x110000));
}

}  // namespace attnscope
