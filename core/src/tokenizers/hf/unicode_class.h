// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace attnscope::hf {

/// Character classes as Rust's regex crate and char methods define them, which is what Hugging
/// Face tokenizers' Rust code tests with (ICU supplies the Unicode properties).
bool isWhitespace(char32_t c);  // char::is_whitespace, regex \s: White_Space
bool isWordChar(char32_t c);    // regex \w: Alphabetic, M, Nd, Pc, Join_Control

}  // namespace attnscope::hf
