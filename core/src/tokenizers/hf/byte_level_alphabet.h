// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope::hf {

/// GPT-2's byte-to-unicode alphabet (bytes_to_unicode): printable bytes stand for themselves,
/// the others for U+0100 onwards, so every byte sequence is a string of visible characters.
/// The alphabet character of a byte, as UTF-8.
const std::string& alphabetCharOfByte(unsigned char byte);
/// The byte an alphabet character stands for, or -1 when it is not one.
int byteOfAlphabetChar(char32_t c);

}  // namespace attnscope::hf
