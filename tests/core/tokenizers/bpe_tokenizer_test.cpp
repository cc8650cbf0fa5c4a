// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/folder_tokenizer.h"
#include "gpt2_byte_symbols.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

const std::string kVocab = std::string(ATTNSCOPE_SHARED_DATA) + "/gpt2/encoder.json";
const std::string kMerges = std::string(ATTNSCOPE_SHARED_DATA) + "/gpt2/vocab.bpe";

struct ReferenceCase {
  std::string text;
  std::vector<int64_t> ids;
};

// Ids from js-tiktoken's "gpt2" encoding (scripts/gen-bpe-reference.js), which we did not write.
std::vector<ReferenceCase> loadReference() {
  std::ifstream in(std::string(ATTNSCOPE_TEST_DATA) + "/bpe_reference.json");
  EXPECT_TRUE(in) << "tests/data/bpe_reference.json is missing";
  std::vector<ReferenceCase> cases;
  if (!in) return cases;
  for (const auto& c : nlohmann::json::parse(in)) {
    cases.push_back({c.at("text").get<std::string>(), c.at("ids").get<std::vector<int64_t>>()});
  }
  return cases;
}

std::string printable(const std::string& s) { return nlohmann::json(s).dump(); }

class Gpt2Bpe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (fs::exists(kVocab) && fs::exists(kMerges)) {
      s_tok = std::make_unique<BpeTokenizer>(BpeTokenizer::fromFiles(kVocab, kMerges));
    }
  }
  static void TearDownTestSuite() { s_tok.reset(); }
  void SetUp() override {
    if (!s_tok) GTEST_SKIP() << "GPT-2 files not found under " << ATTNSCOPE_SHARED_DATA;
  }
  static std::unique_ptr<BpeTokenizer> s_tok;
};
std::unique_ptr<BpeTokenizer> Gpt2Bpe::s_tok;

std::vector<int64_t> idsOf(const std::vector<Token>& tokens) {
  std::vector<int64_t> ids;
  for (const Token& t : tokens) ids.push_back(t.id);
  return ids;
}

TEST_F(Gpt2Bpe, MatchesReferenceIds) {
  const auto cases = loadReference();
  ASSERT_GT(cases.size(), 50u);
  for (const auto& c : cases) {
    SCOPED_TRACE(printable(c.text));
    EXPECT_EQ(idsOf(s_tok->encode(c.text)), c.ids);
    EXPECT_EQ(s_tok->encodeIds(c.text), c.ids);
  }
}

TEST_F(Gpt2Bpe, EndOfTextIsPlainText) {
  const auto ids = s_tok->encodeIds("<|endoftext|>");
  EXPECT_GT(ids.size(), 1u);
  for (int64_t id : ids) EXPECT_NE(id, 50256);
}

TEST_F(Gpt2Bpe, SpansTileTheInputAndTextIsTheirBytes) {
  for (const auto& c : loadReference()) {
    SCOPED_TRACE(printable(c.text));
    std::size_t expectedBegin = 0;
    for (const Token& t : s_tok->encode(c.text)) {
      EXPECT_EQ(t.byteBegin, expectedBegin);
      ASSERT_LE(t.byteEnd, c.text.size());
      ASSERT_LT(t.byteBegin, t.byteEnd);
      EXPECT_EQ(t.text, c.text.substr(t.byteBegin, t.byteEnd - t.byteBegin));
      EXPECT_EQ(t.text, s_tok->tokenBytes(t.id));
      EXPECT_FALSE(t.unknown);
      expectedBegin = t.byteEnd;
    }
    EXPECT_EQ(expectedBegin, c.text.size());
  }
}

TEST_F(Gpt2Bpe, DecodeInvertsEncode) {
  for (const auto& c : loadReference()) {
    EXPECT_EQ(s_tok->decode(s_tok->encodeIds(c.text)), c.text) << printable(c.text);
  }
}

TEST_F(Gpt2Bpe, VocabularyAndNames) {
  EXPECT_EQ(s_tok->vocabSize(), 50257u);
  EXPECT_EQ(s_tok->name(), "gpt2-bpe");
  EXPECT_EQ(s_tok->tokenBytes(262), " the");
  EXPECT_EQ(s_tok->tokenBytes(50256), "<|endoftext|>");
  EXPECT_THROW(s_tok->tokenBytes(50257), Error);
  EXPECT_THROW(s_tok->tokenBytes(-1), Error);
  try {
    s_tok->decode({1, 99999});
    ADD_FAILURE() << "decode accepted an id outside the vocabulary";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
  }
}

TEST_F(Gpt2Bpe, Labels) {
  auto one = [&](const std::string& text) {
    const auto tokens = s_tok->encode(text);
    EXPECT_EQ(tokens.size(), 1u) << printable(text);
    return tokens.empty() ? Token{} : tokens[0];
  };
  EXPECT_EQ(one(" the").label, "\u2423the");
  EXPECT_EQ(one("\n").label, "\u23CE");
  EXPECT_EQ(one("\t").label, "\u21E5");
  EXPECT_EQ(one("\r").label, "\u240D");
  EXPECT_EQ(one("\x01").label, "<0x01>");
  EXPECT_EQ(s_tok->encode("caf\u00e9").back().label,
            "\u00e9");  // whole characters stay as they are

  // GPT-2 has no token for U+1F600, so it is split inside the character.
  const auto emoji = s_tok->encode("\xF0\x9F\x98\x80");
  ASSERT_EQ(emoji.size(), 2u);
  EXPECT_EQ(emoji[0].text, "\xF0\x9F\x98");
  EXPECT_EQ(emoji[0].label, "<0xF0><0x9F><0x98>");
  EXPECT_EQ(emoji[1].text, "\x80");
  EXPECT_EQ(emoji[1].label, "<0x80>");
}

TEST_F(Gpt2Bpe, InvalidUtf8IsAnErrorWithItsOffset) {
  const std::vector<std::pair<std::string, std::size_t>> bad = {
      {"ab\xFF"
       "cd",
       2},                      // never valid
      {"abc\xE2\x82", 3},       // truncated at the end
      {"x\xE2\x82y", 1},        // truncated in the middle
      {"\xC0\xAF", 0},          // overlong '/'
      {"ok \xED\xA0\x80", 3},   // surrogate
      {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
      {"\x80", 0},              // stray continuation byte
  };
  for (const auto& [text, offset] : bad) {
    try {
      s_tok->encode(text);
      ADD_FAILURE() << "accepted " << printable(text);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte " + std::to_string(offset)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(Gpt2Bpe, LongPiecesAreNotQuadratic) {
  // One piece of 200k letters: encoder.py's merge loop would take minutes on this.
  const std::string letters(200000, 'a');
  const std::string spaces(200000, ' ');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s_tok->decode(s_tok->encodeIds(letters)), letters);
  EXPECT_EQ(s_tok->decode(s_tok->encodeIds(spaces)), spaces);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// ---- Files written by the test, so these run without GPT-2's data. ----

class TempDir {
 public:
  TempDir() {
    m_path = fs::temp_directory_path() /
             ("attnscope_bpe_test_" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  std::string write(const std::string& name, const std::string& content) const {
    const fs::path p = m_path / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

 private:
  fs::path m_path;
};

// All 256 bytes (id = byte) plus the given multi-byte tokens.
nlohmann::json byteVocab(const std::vector<std::string>& extra) {
  nlohmann::json v = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) v[test::gpt2ByteSymbol(static_cast<unsigned char>(b))] = b;
  int id = 256;
  for (const auto& t : extra) v[test::gpt2Symbols(t)] = id++;
  return v;
}

ErrorKind kindOf(const std::string& vocab, const std::string& merges, std::string* message) {
  try {
    BpeTokenizer::fromFiles(vocab, merges);
  } catch (const Error& e) {
    *message = e.what();
    return e.kind();
  }
  *message = "no error";
  return ErrorKind::Internal;
}

TEST(BpeTokenizerFiles, SmallVocabularyMergesByRank) {
  TempDir dir;
  const auto vocab = dir.write("vocab.json", byteVocab({"ab", "abc", " d", "bc"}).dump());
  // "b c" ranks after "a b", so "abc" is made as (ab)c; no version line, CRLF endings.
  const auto merges =
      dir.write("merges.txt", "a b\r\nab c\r\n" + test::gpt2Symbols(" ") + " d\r\nb c\r\n");
  const BpeTokenizer tok = BpeTokenizer::fromFiles(vocab, merges);
  EXPECT_EQ(tok.vocabSize(), 260u);
  EXPECT_EQ(tok.encodeIds("abc dbc"), (std::vector<int64_t>{257, 258, 259}));
  EXPECT_EQ(tok.encodeIds("aaab"), (std::vector<int64_t>{'a', 'a', 256}));
  EXPECT_EQ(tok.decode({257, 258}), "abc d");
}

TEST(BpeTokenizerFiles, MissingFilesAreIoErrors) {
  TempDir dir;
  const auto vocab = dir.write("vocab.json", byteVocab({}).dump());
  const auto merges = dir.write("merges.txt", "#version: 0.2\n");
  std::string msg;
  EXPECT_EQ(kindOf(vocab + ".missing", merges, &msg), ErrorKind::Io) << msg;
  EXPECT_EQ(kindOf(vocab, merges + ".missing", &msg), ErrorKind::Io) << msg;
  EXPECT_NE(msg.find("merges.txt.missing"), std::string::npos) << msg;
  EXPECT_NO_THROW(BpeTokenizer::fromFiles(vocab, merges));
}

TEST(BpeTokenizerFiles, MalformedVocabularyIsAFormatErrorNamingTheFile) {
  TempDir dir;
  const auto merges = dir.write("merges.txt", "#version: 0.2\n");
  nlohmann::json missingByte = byteVocab({});
  missingByte.erase(test::gpt2ByteSymbol('x'));
  nlohmann::json stringId = byteVocab({});
  stringId["ab"] = "256";
  nlohmann::json gap = byteVocab({});
  gap["ab"] = 300;
  nlohmann::json duplicateId = byteVocab({});
  duplicateId["ab"] = 5;
  nlohmann::json outsideAlphabet = byteVocab({});
  outsideAlphabet["a b"] = 256;  // a raw space is not in the byte-level alphabet ("Ġ" is)
  const std::vector<std::string> contents = {
      "{not json",
      "[1, 2, 3]",
      "{}",
      missingByte.dump(),
      stringId.dump(),
      gap.dump(),
      duplicateId.dump(),
      outsideAlphabet.dump(),
  };
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const auto vocab = dir.write("vocab" + std::to_string(i) + ".json", contents[i]);
    std::string msg;
    EXPECT_EQ(kindOf(vocab, merges, &msg), ErrorKind::Format) << contents[i].substr(0, 40) << msg;
    EXPECT_NE(msg.find(vocab), std::string::npos) << msg;
  }
}

TEST(BpeTokenizerFiles, MalformedMergesAreAFormatErrorNamingFileAndLine) {
  TempDir dir;
  const auto vocab = dir.write("vocab.json", byteVocab({"ab"}).dump());
  const std::vector<std::string> contents = {
      "#version: 0.2\nab\n",              // one token
      "#version: 0.2\na b c\n",           // three tokens
      "#version: 0.2\na  b\n",            // two spaces
      "#version: 0.2\na c\n",             // "ac" is not in the vocabulary
      "#version: 0.2\na \xE2\x82\xAC\n",  // U+20AC is not in the byte-level alphabet
  };
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const auto merges = dir.write("merges" + std::to_string(i) + ".txt", contents[i]);
    std::string msg;
    EXPECT_EQ(kindOf(vocab, merges, &msg), ErrorKind::Format) << printable(contents[i]) << msg;
    EXPECT_NE(msg.find(merges + " line 2"), std::string::npos) << msg;
  }
}

// OPT's folders ship vocab.json + merges.txt (no tokenizer.json) and "add_bos_token": true in
// tokenizer_config.json: GPT2Tokenizer puts bos_token ("</s>", id 2) before the text. The ids are
// Hugging Face tokenizers' for the same vocabulary as a tokenizer.json with the post-processor
// transformers' GPT2Converter writes for add_bos_token (scripts/gen-opt-tokenizer-reference.js,
// tests/data/tokenizers/reference/opt.json); the vocabulary is composed the same way here.
TEST_F(Gpt2Bpe, OptFolderPutsBosFirstAsTokenizerConfigSays) {
  nlohmann::json encoder;
  std::ifstream(kVocab) >> encoder;
  nlohmann::json vocab = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  for (auto it = encoder.begin(); it != encoder.end(); ++it)
    if (it.key() != "<|endoftext|>") vocab[it.key()] = it.value().get<int64_t>() + 4;
  std::ifstream mergesIn(kMerges, std::ios::binary);
  const std::string merges((std::istreambuf_iterator<char>(mergesIn)),
                           std::istreambuf_iterator<char>());
  TempDir dir;
  const fs::path folder = fs::path(dir.write("vocab.json", vocab.dump())).parent_path();
  dir.write("merges.txt", merges);
  const nlohmann::json added = {{"__type", "AddedToken"}, {"content", "</s>"},
                                {"lstrip", false},        {"normalized", true},
                                {"rstrip", false},        {"single_word", false}};
  dir.write("tokenizer_config.json",
            nlohmann::json({{"add_bos_token", true}, {"bos_token", added}}).dump());
  std::ifstream in(std::string(ATTNSCOPE_TEST_DATA) + "/tokenizers/reference/opt.json");
  ASSERT_TRUE(in) << "tests/data/tokenizers/reference/opt.json is missing";
  const nlohmann::json reference = nlohmann::json::parse(in);
  ASSERT_FALSE(reference.at("cases").empty());
  const FolderTokenizer opt = FolderTokenizer::open(folder.string());
  for (const auto& c : reference.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const std::vector<Token> tokens = opt.encode(text);
    EXPECT_EQ(idsOf(tokens), c.at("ids").get<std::vector<int64_t>>()) << printable(text);
    ASSERT_FALSE(tokens.empty());
    EXPECT_TRUE(tokens[0].special);
    EXPECT_EQ(tokens[0].label, "</s>");
    EXPECT_EQ(opt.encodeIds(text, nullptr).ids, idsOf(tokens));
  }
}

// The same rule on a small vocabulary: add_bos_token false or absent (GPT2Tokenizer's default,
// GPT-2's folders) puts nothing first; a bos_token the vocabulary lacks, or a wrong type, names
// tokenizer_config.json.
TEST(BpeTokenizerFiles, AddBosTokenFromTokenizerConfig) {
  TempDir dir;
  const fs::path folder =
      fs::path(dir.write("vocab.json", byteVocab({"ab", "</s>"}).dump())).parent_path();
  dir.write("merges.txt", "#version: 0.2\na b\n");
  const auto ids = [&] { return idsOf(FolderTokenizer::open(folder.string()).encode("ab")); };
  EXPECT_EQ(ids(), (std::vector<int64_t>{256}));
  const std::string config =
      dir.write("tokenizer_config.json", R"({"add_bos_token": true, "bos_token": "</s>"})");
  EXPECT_EQ(ids(), (std::vector<int64_t>{257, 256}));
  dir.write("tokenizer_config.json", R"({"add_bos_token": false, "bos_token": "</s>"})");
  EXPECT_EQ(ids(), (std::vector<int64_t>{256}));
  dir.write("tokenizer_config.json", R"({"model_max_length": 1024})");
  EXPECT_EQ(ids(), (std::vector<int64_t>{256}));
  for (const char* text : {R"({"add_bos_token": true, "bos_token": "<bos>"})",
                           R"({"add_bos_token": "yes"})", R"({"add_bos_token": true})"}) {
    dir.write("tokenizer_config.json", text);
    try {
      ids();
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Format) << e.what();
      EXPECT_NE(std::string(e.what()).find(config), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace attnscope
