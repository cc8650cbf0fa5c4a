// SPDX-License-Identifier: GPL-3.0-or-later
// tokenizeBatch's refusals of input with nothing to look at (issue 34: `--text ""` was accepted
// by BERT, whose template makes [CLS] [SEP] of any text).
#include "runtime/batch_input.h"

#include <gtest/gtest.h>

#include "attnscope/run_request.h"
#include "expect_error.h"

namespace attnscope {
namespace {

/// An encoder's tokenizer in miniature: [CLS] and [SEP] inserted (special, no bytes), one token
/// per byte of the text between them; "[CLS]" typed in the text is a special token with bytes.
std::vector<Token> bertLike(const std::string& text) {
  std::vector<Token> out;
  Token cls;
  cls.special = true;
  out.push_back(cls);
  if (text == "[CLS]") {
    Token typed = cls;
    typed.byteEnd = text.size();
    out.push_back(typed);
  } else {
    for (std::size_t i = 0; i < text.size(); ++i) {
      Token t;
      t.byteBegin = i;
      t.byteEnd = i + 1;
      out.push_back(t);
    }
  }
  out.push_back(cls);  // [SEP]
  return out;
}

TEST(TokenizeBatch, ATextOfInsertedSpecialTokensOnlyIsEmpty) {
  RunRequest r;
  r.texts = {""};
  test::expectError([&] { tokenizeBatch(r, bertLike, 512); }, ErrorKind::InvalidArgument,
                    "the text is empty: type some text");
  r.texts = {"hi", ""};
  test::expectError([&] { tokenizeBatch(r, bertLike, 512); }, ErrorKind::InvalidArgument,
                    "text 2 is empty");
  r.texts = {"hi"};
  EXPECT_EQ(tokenizeBatch(r, bertLike, 512).tokens.front().size(), 4u);
  // A special token the user typed is text.
  r.texts = {"[CLS]"};
  EXPECT_EQ(tokenizeBatch(r, bertLike, 512).tokens.front().size(), 3u);
}

}  // namespace
}  // namespace attnscope
