// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/token.h"

namespace attnscope::fuzz {

/// A property the code under test promised and broke: report it as a crash, so libFuzzer saves
/// the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what.c_str());
  std::abort();
}

/// Errors are values at the core boundary: Error is the only exception a reader may throw, and
/// an Internal one is a bug.
template <typename F>
void expectOnlyUserErrors(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (!e.isUserError()) fail(std::string("internal error: ") + e.what());
  }
}

/// Tokens' byte spans lie inside the text, in order, without overlap, and text matches the span.
inline void checkSpans(const std::string& input, const std::vector<Token>& tokens) {
  std::size_t last = 0;
  for (const Token& t : tokens) {
    if (t.byteBegin < last || t.byteEnd < t.byteBegin || t.byteEnd > input.size()) {
      fail("token span out of order or out of the input");
    }
    if (input.compare(t.byteBegin, t.byteEnd - t.byteBegin, t.text) != 0)
      fail("token text is not its span");
    last = t.byteEnd;
  }
}

}  // namespace attnscope::fuzz
