// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "attnscope/error.h"
#include "attnscope/utf8.h"

namespace attnscope {
namespace {

TEST(Utf8, AcceptsValidAndFindsTheFirstBadByte) {
  EXPECT_TRUE(isValidUtf8("plain ascii"));
  EXPECT_TRUE(isValidUtf8("héllo wörld 日本語 🙂 e\xCC\x81"));
  struct Case {
    std::string bytes;
    std::size_t bad;
  };
  const Case cases[] = {
      {"ab\xC3", 2},             // truncated two-byte sequence
      {"a\xC0\xAF", 1},          // overlong '/'
      {"\xED\xA0\x80", 0},       // surrogate U+D800
      {"x\xF4\x90\x80\x80", 1},  // above U+10FFFF
      {"ok\x80", 2},             // stray continuation byte
      {"\xFF", 0},
      {"\xE2\x82", 0},  // truncated three-byte sequence
  };
  for (const Case& c : cases) {
    std::size_t bad = 99;
    EXPECT_FALSE(isValidUtf8(c.bytes, &bad));
    EXPECT_EQ(bad, c.bad);
  }
}

TEST(Utf8, DecodeGivesCodePointsAndSpans) {
  const auto cps = decodeUtf8("aé🙂");
  ASSERT_EQ(cps.size(), 3u);
  EXPECT_EQ(cps[1].value, 0xE9u);
  EXPECT_EQ(cps[1].byteBegin, 1u);
  EXPECT_EQ(cps[1].byteEnd, 3u);
  EXPECT_EQ(cps[2].value, 0x1F642u);
  EXPECT_EQ(cps[2].byteEnd, 7u);
  for (char32_t c : {0x41u, 0xE9u, 0x20ACu, 0x1F642u})
    EXPECT_EQ(decodeUtf8(encodeUtf8(c))[0].value, c);
  try {
    decodeUtf8("ok\xC3\x28", "the input");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_STREQ(e.what(), "invalid UTF-8 at byte 2 of the input");
  }
}

TEST(Utf8, ReadableLabels) {
  EXPECT_EQ(readableLabel(" the"), "\u2423the");
  EXPECT_EQ(readableLabel("\n"), "\u23CE");
  EXPECT_EQ(readableLabel("\t"), "\u21E5");
  EXPECT_EQ(readableLabel("\x01"), "<0x01>");
  EXPECT_EQ(readableLabel("\xF0\x9F"), "<0xF0><0x9F>");  // half an emoji
  EXPECT_EQ(readableLabel("日本"), "日本");
}

}  // namespace
}  // namespace attnscope
