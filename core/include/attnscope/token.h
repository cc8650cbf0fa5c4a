// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope {

/// One token of an input text, with where it came from.
struct Token {
  int64_t id = 0;
  std::string text;   // the raw UTF-8 bytes of this token (BPE tokens may hold a partial character)
  std::string label;  // readable form for axis labels: "␣the", "⏎", "<0xE2>"
  std::size_t byteBegin = 0;  // [byteBegin, byteEnd) into the input text
  std::size_t byteEnd = 0;
  int segment = 0;       // sentence pairs: 0 for the first text, 1 for the second
  bool special = false;  // inserted by the tokenizer's template ([CLS], [SEP], <s>) or an added
                         // token marked special: what "hide special tokens" hides
  bool unknown = false;  // not in the model's vocabulary (shown, reported, never a crash)
};

}  // namespace attnscope
