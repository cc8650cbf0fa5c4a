// SPDX-License-Identifier: GPL-3.0-or-later
// The probe's pieces and text, on a stand-in model whose tokenizer is written here.
#include "attnscope/induction_probe.h"

#include <gtest/gtest.h>

#include <set>

#include "attnscope/error.h"

namespace attnscope {
namespace {

/// One token per byte, id = the byte, wrapped in [CLS] (special, id 1000) like an encoder.
/// '?' is unknown. With `markStart`, the first byte of a text gets id byte + 500: a token whose id
/// depends on its context, which must not enter the pool unless it round-trips.
class ByteModel final : public Model {
 public:
  explicit ByteModel(bool markStart = false) : m_markStart(markStart) {}
  ModelInfo info() const override { return {}; }
  std::vector<Token> tokenize(const std::string& text) const override {
    std::vector<Token> out;
    Token cls;
    cls.id = 1000;
    cls.label = "[CLS]";
    cls.special = true;
    out.push_back(cls);
    for (std::size_t i = 0; i < text.size(); ++i) {
      Token t;
      t.id = static_cast<unsigned char>(text[i]);
      t.text = t.label = text.substr(i, 1);
      t.byteBegin = i;
      t.byteEnd = i + 1;
      if (m_markStart && i == 0) t.id += 500;
      t.unknown = text[i] == '?';
      out.push_back(t);
    }
    return out;
  }
  AttentionResult run(const RunRequest&) const override { return {}; }
  std::vector<NamedTensor> parameters() const override { return {}; }

 private:
  bool m_markStart;
};

std::string texts(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) s += t.text;
  return s;
}

TEST(InductionProbe, PiecesAreDistinctRoundTrippingTokens) {
  const ByteModel model;
  // Specials, the unknown '?' and repeats are left out; first occurrence order.
  EXPECT_EQ(texts(probePieces(model, "abca?b d")), "abc d");
  // Only the text-initial 'x' (id 620) tokenizes alone to its own id; the later 'y', 'x' (ids
  // 121, 120) come back as 621/620 alone.
  const ByteModel marking(true);
  const std::vector<Token> pool = probePieces(marking, "xyx");
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool[0].id, 'x' + 500);
}

TEST(InductionProbe, SeededDistinctSequenceWrittenTwice) {
  const ByteModel model;
  const std::vector<Token> pool = probePieces(model, "abcdefghijklmnopqrstuvwxyz");
  const InductionProbe probe = inductionProbe(pool, 10, 42);
  ASSERT_EQ(probe.sequence.size(), 10u);
  const std::string once = texts(probe.sequence);
  EXPECT_EQ(probe.text, once + once);
  EXPECT_EQ(std::set<char>(once.begin(), once.end()).size(), 10u);  // without replacement
  const std::vector<int64_t> ids = probe.expectedIds();
  ASSERT_EQ(ids.size(), 20u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(ids[i], static_cast<unsigned char>(once[i]));
    EXPECT_EQ(ids[i + 10], ids[i]);
  }
  // The same seed gives the same probe; some other seed gives another.
  EXPECT_EQ(inductionProbe(pool, 10, 42).text, probe.text);
  bool differs = false;
  for (uint64_t seed = 0; seed < 4; ++seed)
    differs |= inductionProbe(pool, 10, seed).text != probe.text;
  EXPECT_TRUE(differs);
}

TEST(InductionProbe, RefusesTooSmallPool) {
  const ByteModel model;
  const std::vector<Token> pool = probePieces(model, "abc");
  EXPECT_NO_THROW(inductionProbe(pool, 3, 1));
  try {
    inductionProbe(pool, 4, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("has only 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(inductionProbe(pool, 0, 1), Error);
}

}  // namespace
}  // namespace attnscope
