// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope {

/// One decoded code point and where its bytes are.
struct CodePoint {
  char32_t value = 0;
  std::size_t byteBegin = 0;
  std::size_t byteEnd = 0;
};

/// Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF). On failure returns false and
/// sets *badOffset to the first offending byte.
bool isValidUtf8(std::string_view text, std::size_t* badOffset = nullptr);
/// Throws Error(InvalidArgument) "invalid UTF-8 at byte N of <what>".
void requireValidUtf8(std::string_view text, const std::string& what);
/// Decodes valid UTF-8; throws like requireValidUtf8 otherwise.
std::vector<CodePoint> decodeUtf8(std::string_view text, const std::string& what = "text");
std::string encodeUtf8(char32_t cp);

/// True for marks that attach to the previous character (combining marks, variation selectors,
/// zero-width joiner and what it joins, emoji skin-tone modifiers), so the char tokenizer keeps a
/// user-perceived character together.
bool isExtendingCodePoint(char32_t cp);

/// An axis label for a token's raw text: spaces as "␣", newline "⏎", tab "⇥", other controls as
/// "<0xNN>", invalid or partial UTF-8 bytes as "<0xNN>".
std::string readableLabel(std::string_view raw);

}  // namespace attnscope
