// SPDX-License-Identifier: GPL-3.0-or-later
// Every committed reference vector of Hugging Face's own tokenizers library (tests/data/tokenizers/
// reference, made by scripts/gen-tokenizer-reference.js) against HfTokenizer: ids, type ids and
// byte offsets, case by case. Tokenizer files from ../shared are used when present; those cases
// skip without them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attnscope/error.h"
#include "attnscope/hf_tokenizer.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path referenceDir() { return fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / "reference"; }

/// GPT-2's tokenizer.json as Hugging Face writes it, composed from the shared encoder.json and
/// vocab.bpe with the settings the reference file records.
std::string composeGpt2(const nlohmann::json& composition) {
  const fs::path dir = fs::path(ATTNSCOPE_SHARED_DATA) / "gpt2";
  nlohmann::json j = composition;
  j["model"]["vocab"] = nlohmann::json::parse(readAll(dir / "encoder.json"));
  nlohmann::json merges = nlohmann::json::array();
  std::istringstream lines(readAll(dir / "vocab.bpe"));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    merges.push_back(line);
  }
  j["model"]["merges"] = merges;
  return j.dump();
}

/// The tokenizer a reference file names, or nullopt (with the reason) when its file is absent.
std::optional<HfTokenizer> tokenizerFor(const nlohmann::json& ref, std::string* why) {
  const std::string source = ref["tokenizer"].get<std::string>();
  if (source.rfind("shared:", 0) == 0) {
    const fs::path p = fs::path(ATTNSCOPE_SHARED_DATA) / "tokenizers" / source.substr(7);
    if (!fs::exists(p)) {
      *why = "no " + p.string();
      return std::nullopt;
    }
    return HfTokenizer::fromFile(p.string());
  }
  if (source.rfind("fixture:", 0) == 0) {
    return HfTokenizer::fromFile(
        (fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / source.substr(8)).string());
  }
  if (source == "composed:gpt2") {
    if (!fs::exists(fs::path(ATTNSCOPE_SHARED_DATA) / "gpt2" / "vocab.bpe")) {
      *why = "no ../shared/data/gpt2";
      return std::nullopt;
    }
    return HfTokenizer::fromJson(composeGpt2(ref["composition"]), "composed gpt2 tokenizer.json");
  }
  *why = "unknown tokenizer source " + source;
  return std::nullopt;
}

class OracleVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleVectors, IdsTypeIdsAndByteOffsetsEqualHuggingFace) {
  const nlohmann::json ref =
      nlohmann::json::parse(readAll(referenceDir() / (GetParam() + ".json")));
  std::string why;
  const std::optional<HfTokenizer> tok = tokenizerFor(ref, &why);
  if (!tok) GTEST_SKIP() << why;
  const nlohmann::json& cases = ref["cases"];
  ASSERT_GE(cases.size(), 40u);
  int failed = 0;
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::string pair = c["pair"].is_string() ? c["pair"].get<std::string>() : std::string();
    const HfEncoding e = tok->encodeIds(text, c["pair"].is_string() ? &pair : nullptr);
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    std::vector<std::pair<std::size_t, std::size_t>> offsets, want;
    for (std::size_t i = 0; i < e.ids.size(); ++i) offsets.emplace_back(e.begins[i], e.ends[i]);
    for (const nlohmann::json& o : c["offsets"])
      want.emplace_back(o[0].get<std::size_t>(), o[1].get<std::size_t>());
    const bool ok =
        e.ids == ids && offsets == want && e.typeIds == c["type_ids"].get<std::vector<uint32_t>>();
    if (!ok && ++failed <= 5) {
      std::ostringstream got, exp;
      for (std::size_t i = 0; i < e.ids.size(); ++i)
        got << e.ids[i] << "'" << e.tokens[i] << "'[" << e.begins[i] << "," << e.ends[i]
            << "):" << e.typeIds[i] << " ";
      for (std::size_t i = 0; i < ids.size(); ++i)
        exp << ids[i] << "'" << c["tokens"][i].get<std::string>() << "'[" << want[i].first << ","
            << want[i].second << "):" << c["type_ids"][i] << " ";
      ADD_FAILURE() << GetParam() << ": " << nlohmann::json(text).dump()
                    << (pair.empty() ? "" : " + ")
                    << (pair.empty() ? "" : nlohmann::json(pair).dump()) << "\n  got  " << got.str()
                    << "\n  want " << exp.str();
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << cases.size() << " cases differ from "
                       << ref["oracle"];
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, OracleVectors,
                         ::testing::Values("gpt2", "llama2", "llama3", "qwen3", "wordpiece",
                                           "wordlevel", "unigram"));

// Overlapping added tokens, single_word ones among them, where a single_word match lacks a word
// boundary: Hugging Face discards that match and searches on after it, without trying shorter
// tokens at the same start (scripts/gen-added-token-reference.js wrote the vectors).
TEST(OracleAddedTokens, SingleWordMatchesAreDiscardedAsHuggingFaceDoes) {
  const nlohmann::json ref = nlohmann::json::parse(readAll(referenceDir() / "added_tokens.json"));
  const HfTokenizer tok = HfTokenizer::fromJson(ref["tokenizer"].dump(), "added_tokens.json");
  ASSERT_GE(ref["cases"].size(), 10u);
  for (const nlohmann::json& c : ref["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const HfEncoding e = tok.encodeIds(text, nullptr);
    std::vector<std::vector<std::size_t>> offsets;
    for (std::size_t i = 0; i < e.ids.size(); ++i) offsets.push_back({e.begins[i], e.ends[i]});
    EXPECT_EQ(e.ids, c["ids"].get<std::vector<int64_t>>()) << text;
    EXPECT_EQ(offsets, c["offsets"].get<std::vector<std::vector<std::size_t>>>()) << text;
  }
}

}  // namespace
}  // namespace attnscope

namespace attnscope {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Labels come from the decoder: the vocabulary's markers (Ġ, ▁, ##, <0xNN>) never reach a view
// unless the text itself has them, and a character split into byte pieces is shown whole.
TEST_P(OracleVectors, LabelsAreDecodedText) {
  const nlohmann::json ref =
      nlohmann::json::parse(readAll(referenceDir() / (GetParam() + ".json")));
  std::string why;
  const std::optional<HfTokenizer> tok = tokenizerFor(ref, &why);
  if (!tok) GTEST_SKIP() << why;
  for (const nlohmann::json& c : ref["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<Token> tokens = tok->encode(text);
    const HfEncoding e = tok->encodeIds(text);
    ASSERT_EQ(tokens.size(), e.ids.size()) << text;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      EXPECT_EQ(tokens[i].id, e.ids[i]);
      EXPECT_EQ(tokens[i].label, e.labels[i]);
      const std::string& label = tokens[i].label;
      if (e.special[i]) continue;  // "<s>", "[CLS]": shown as they are
      // readableLabel shows control characters as <0xNN> on purpose; only those may carry it.
      const std::string span =
          text.substr(tokens[i].byteBegin, tokens[i].byteEnd - tokens[i].byteBegin);
      const bool control = std::any_of(span.begin(), span.end(), [](char ch) {
        return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F;
      });
      for (const char* marker : {"\xC4\xA0", "\xE2\x96\x81", "<0x"}) {
        if (contains(text, marker) || (control && std::string(marker) == "<0x")) continue;
        EXPECT_FALSE(contains(label, marker)) << GetParam() << " " << label << " in " << text;
      }
      if (!contains(text, "##")) {
        EXPECT_NE(label.rfind("##", 0), 0u) << label;
      }
    }
  }
}

std::string withComponent(const std::string& key, const std::string& json) {
  nlohmann::json j = nlohmann::json::parse(
      readAll(fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / "wordpiece.json"));
  j[key] = nlohmann::json::parse(json);
  return j.dump();
}

void expectFormatError(const std::string& json, const std::string& words) {
  try {
    HfTokenizer::fromJson(json, "t.json");
    ADD_FAILURE() << "no error for " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Format);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(HfTokenizer, MalformedOrUnsupportedFilesNameTheComponent) {
  expectFormatError(withComponent("pre_tokenizer", R"({"type": "Foo"})"),
                    "t.json: pre_tokenizer: type \"Foo\" is not supported");
  expectFormatError(withComponent("normalizer", R"({"type": "Bar"})"),
                    "normalizer: type \"Bar\" is not supported");
  expectFormatError(withComponent("model", R"({"type": "Baz"})"),
                    "model: type \"Baz\" is not supported");
  expectFormatError(withComponent("post_processor", R"({"type": "Qux"})"),
                    "post_processor: type \"Qux\"");
  expectFormatError(withComponent("decoder", R"({"type": "Quux"})"), "decoder: type \"Quux\"");
  expectFormatError(
      withComponent(
          "pre_tokenizer",
          R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": false})"),
      "does not compile");
  expectFormatError(
      withComponent("model", R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]})"), "model");
  expectFormatError(withComponent("added_tokens", R"([{"content": 3}])"), "added_tokens");
  expectFormatError("{not json", "t.json: not valid JSON (byte 3");
  expectFormatError("[]", "not a JSON object");
  expectFormatError(R"({"normalizer": null})", "model");
}

TEST(HfTokenizer, InvalidUtf8IsRefusedNotTokenized) {
  const HfTokenizer tok = HfTokenizer::fromFile(
      (fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / "wordpiece.json").string());
  try {
    tok.encode("ab\xff");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
  }
}

}  // namespace
}  // namespace attnscope
