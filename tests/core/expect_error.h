// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "attnscope/error.h"

namespace attnscope::test {

/// Runs f and checks that it throws attnscope::Error of `kind` whose message contains `word`,
/// so a test pins down which check fired, not just that something did.
template <typename F>
void expectError(F&& f, ErrorKind kind, const std::string& word) {
  try {
    f();
    ADD_FAILURE() << "expected an Error mentioning '" << word << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos)
        << "'" << e.what() << "' lacks '" << word << "'";
  }
}

/// expectError for a malformed file: Error(Format) whose message names the file ("<source>: ")
/// and contains `word`.
template <typename F>
void expectFormatErrorIn(F&& f, const std::string& source, const std::string& word) {
  expectError(f, ErrorKind::Format, word);
  expectError(f, ErrorKind::Format, source + ": ");
}

}  // namespace attnscope::test
