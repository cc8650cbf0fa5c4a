// SPDX-License-Identifier: GPL-3.0-or-later
// Every committed reference vector of Hugging Face's own tokenizers library (tests/data/tokenizers/
// reference, made by scripts/gen-tokenizer-reference.js) against HfTokenizer: ids, type ids and
// byte offsets, case by case. Tokenizer files from ../shared are used when present; those cases
// skip without them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace attnscope
