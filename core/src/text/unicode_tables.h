// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Unicode character classes for the GPT-2 pre-tokeniser, from generated range tables
// (scripts/gen-unicode-tables.py) so the core needs no ICU.

namespace attnscope {

bool isUnicodeLetter(char32_t cp);      // \p{L}
bool isUnicodeNumber(char32_t cp);      // \p{N}
bool isUnicodeWhitespace(char32_t cp);  // \s: Unicode White_Space, as in GPT-2's regex

}  // namespace attnscope
