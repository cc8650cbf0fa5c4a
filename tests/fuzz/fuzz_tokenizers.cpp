// SPDX-License-Identifier: GPL-3.0-or-later
// The char and word tokenizers on arbitrary bytes: valid UTF-8 gives tokens whose spans lie in
// order inside the text; invalid UTF-8 throws Error(InvalidArgument).
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnscope/char_tokenizer.h"
#include "attnscope/word_tokenizer.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const CharTokenizer chars;
  static const WordTokenizer words;
  bool charsValid = false;
  fuzz::expectOnlyUserErrors([&] {
    const auto tokens = chars.encode(text);
    fuzz::checkSpans(text, tokens);
    // Characters tile the text: nothing is dropped.
    if (!text.empty() && (tokens.empty() || tokens.back().byteEnd != text.size()))
      fuzz::fail("char tokens do not cover the text");
    charsValid = true;
  });
  bool wordsValid = false;
  fuzz::expectOnlyUserErrors([&] {
    fuzz::checkSpans(text, words.encode(text));
    wordsValid = true;
  });
  if (charsValid != wordsValid)
    fuzz::fail("char and word tokenizers disagree on whether the text is valid");
  return 0;
}
