// SPDX-License-Identifier: GPL-3.0-or-later
// The tokenizer stored in a GGUF file's metadata against Hugging Face's own tokenizers library.
// Each real case fills a GgufVocabulary from a tokenizer.json the way llama.cpp's converter
// (convert_hf_to_gguf.py with gguf-py's vocab.py) fills the tokenizer.ggml.* keys, then checks ids,
// type ids and byte offsets against the committed reference vectors of that tokenizer.json
// (tests/data/tokenizers/reference, from scripts/gen-tokenizer-reference.js). The Llama 2, Llama 3
// and Qwen3 files come from ../shared and skip without it; the toy vocabularies always run.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "attnscope/error.h"
#include "tokenizers/gguf_vocabulary.h"

namespace attnscope {
namespace {
// Named: the unity build joins this file with the other tokenizer tests and their helpers.
namespace gguf_vocabulary_test {

namespace fs = std::filesystem;
using nlohmann::json;

std::string readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json readJson(const fs::path& p) { return json::parse(readAll(p)); }

fs::path sharedTokenizer(const std::string& name) {
  return fs::path(ATTNSCOPE_SHARED_DATA) / "tokenizers" / name / "tokenizer.json";
}

json reference(const std::string& name) {
  return readJson(fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / "reference" / (name + ".json"));
}

int32_t type(GgufTokenType t) { return static_cast<int32_t>(t); }

/// convert_hf_to_gguf's does_token_look_special: added tokens that are not marked special but
/// look like control tokens become control tokens.
bool looksSpecial(const std::string& t) {
  auto wraps = [&](const std::string& a, const std::string& b) {
    return t.size() >= a.size() + b.size() && t.compare(0, a.size(), a) == 0 &&
           t.compare(t.size() - b.size(), b.size(), b) == 0;
  };
  return t == "<pad>" || t == "<mask>" || wraps("<|", "|>") || wraps("<unused", ">");
}

/// The tokens and types get_vocab_base writes for a tokenizer.json: the model's vocabulary, then
/// its added tokens (control when special or special-looking, else user-defined), then
/// "[PAD<id>]" unused entries up to padTo.
void fillTokens(const json& tj, GgufVocabulary& v, std::size_t padTo = 0) {
  std::map<int64_t, std::pair<std::string, int32_t>> byId;
  for (const auto& [token, id] : tj["model"]["vocab"].items())
    byId[id.get<int64_t>()] = {token, type(GgufTokenType::Normal)};
  for (const json& a : tj["added_tokens"]) {
    const std::string content = a["content"].get<std::string>();
    const bool control = a["special"].get<bool>() || looksSpecial(content);
    byId[a["id"].get<int64_t>()] = {
        content, type(control ? GgufTokenType::Control : GgufTokenType::UserDefined)};
  }
  const std::size_t n = std::max(padTo, static_cast<std::size_t>(byId.rbegin()->first + 1));
  for (std::size_t i = 0; i < n; ++i) {
    const auto it = byId.find(static_cast<int64_t>(i));
    v.tokens.push_back(it != byId.end() ? it->second.first : "[PAD" + std::to_string(i) + "]");
    v.tokenTypes.push_back(it != byId.end() ? it->second.second : type(GgufTokenType::Unused));
  }
}

/// gguf-py's SpecialVocab: merges as "left right" strings (the newer pair form joined, a space
/// inside a token written as U+0120).
std::vector<std::string> mergeStrings(const json& merges) {
  std::vector<std::string> out;
  for (const json& m : merges) {
    if (m.is_string()) {
      out.push_back(m.get<std::string>());
      continue;
    }
    std::string parts[2] = {m[0].get<std::string>(), m[1].get<std::string>()};
    for (std::string& p : parts) {
      for (std::size_t k; (k = p.find(' ')) != std::string::npos;) p.replace(k, 1, "\xC4\xA0");
    }
    out.push_back(parts[0] + " " + parts[1]);
  }
  return out;
}

/// Llama 2 as the converter writes it from tokenizer.model (SentencePieceVocab): pieces by id,
/// <unk> unknown, <s> </s> control, <0xNN> byte, the rest normal, each with its SentencePiece
/// score. tokenizer.model is not in ../shared, so the scores are read back from tokenizer.json:
/// SentencePiece gives a piece the priority it was merged at, which is the rank of the first
/// merge making it (pieces no merge makes, single characters, rank below all of them).
GgufVocabulary llama2Vocabulary(const json& tj) {
  GgufVocabulary v;
  v.model = "llama";
  v.source = "llama2.gguf";
  fillTokens(tj, v);
  std::map<std::string, std::size_t> firstRank;
  const json& merges = tj["model"]["merges"];
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string m = merges[r].get<std::string>();
    const std::size_t space = m.find(' ');
    firstRank.emplace(m.substr(0, space) + m.substr(space + 1), r);
  }
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    const bool isByte = t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t.back() == '>';
    if (t == "<unk>") v.tokenTypes[i] = type(GgufTokenType::Unknown);
    if (isByte) v.tokenTypes[i] = type(GgufTokenType::Byte);
    const auto it = firstRank.find(t);
    v.scores.push_back(v.tokenTypes[i] != type(GgufTokenType::Normal) ? 0.0f
                       : it != firstRank.end() ? -static_cast<float>(it->second)
                                               : -static_cast<float>(merges.size() + i));
  }
  v.unkId = 0;
  v.bosId = 1;
  v.eosId = 2;
  v.addBos = true;  // tokenizer_config's add_bos_token
  v.addEos = false;
  v.addSpacePrefix = true;  // the model's normalizer_spec.add_dummy_prefix
  return v;
}

/// Llama 3 as BpeVocab / get_vocab_base write it: "llama-bpe", bos and eos from
/// tokenizer_config.json. No add_bos_token key: this copy of tokenizer.json predates the
/// template Meta added later, so SpecialVocab finds nothing to write and llama.cpp's default for
/// llama-bpe (add a BOS) applies.
GgufVocabulary llama3Vocabulary(const json& tj) {
  GgufVocabulary v;
  v.model = "gpt2";
  v.pre = "llama-bpe";
  v.source = "llama3.gguf";
  fillTokens(tj, v);
  v.merges = mergeStrings(tj["model"]["merges"]);
  v.bosId = 128000;
  v.eosId = 128001;
  return v;
}

/// Qwen3: "qwen2", padded to config.json's vocab_size (151936) with unused entries,
/// add_bos_token false from tokenizer_config.json.
GgufVocabulary qwen3Vocabulary(const json& tj) {
  GgufVocabulary v;
  v.model = "gpt2";
  v.pre = "qwen2";
  v.source = "qwen3.gguf";
  fillTokens(tj, v, 151936);
  v.merges = mergeStrings(tj["model"]["merges"]);
  v.eosId = 151645;
  v.padId = 151643;
  v.addBos = false;
  return v;
}

/// BertModel.set_vocab: the WordPiece vocabulary in phantom-space form ("▁word", "piece" for
/// "##piece", control tokens as they are); the template gives add_bos / add_eos.
GgufVocabulary bertVocabulary(const json& tj) {
  GgufVocabulary v;
  v.model = "bert";
  v.source = "bert.gguf";
  fillTokens(tj, v);
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    std::string& t = v.tokens[i];
    if (v.tokenTypes[i] == type(GgufTokenType::Control)) continue;
    t = t.compare(0, 2, "##") == 0 ? t.substr(2) : "\xE2\x96\x81" + t;
  }
  const json& vocab = tj["model"]["vocab"];
  v.unkId = vocab["[UNK]"].get<int64_t>();
  v.clsId = vocab["[CLS]"].get<int64_t>();
  v.sepId = vocab["[SEP]"].get<int64_t>();
  v.padId = vocab["[PAD]"].get<int64_t>();
  v.maskId = vocab["[MASK]"].get<int64_t>();
  v.addBos = true;
  v.addEos = true;
  return v;
}

/// Every case of a reference file: ids, byte offsets and type ids. extraBos: an id the GGUF
/// tokenizer puts first that this tokenizer.json does not.
void expectReference(const HfTokenizer& tok, const json& ref, std::optional<int64_t> extraBos,
                     const std::string& name) {
  int failed = 0;
  for (const json& c : ref["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::string pair = c["pair"].is_string() ? c["pair"].get<std::string>() : std::string();
    const HfEncoding e = tok.encodeIds(text, c["pair"].is_string() ? &pair : nullptr);
    auto ids = c["ids"].get<std::vector<int64_t>>();
    auto typeIds = c["type_ids"].get<std::vector<uint32_t>>();
    std::vector<std::pair<std::size_t, std::size_t>> want, got;
    for (const json& o : c["offsets"])
      want.emplace_back(o[0].get<std::size_t>(), o[1].get<std::size_t>());
    if (extraBos && pair.empty()) {
      ids.insert(ids.begin(), *extraBos);
      typeIds.insert(typeIds.begin(), 0);
      want.insert(want.begin(), {0, 0});
    }
    if (extraBos && !pair.empty()) continue;  // a pair template is not what the file says
    for (std::size_t i = 0; i < e.ids.size(); ++i) got.emplace_back(e.begins[i], e.ends[i]);
    if (e.ids != ids || got != want || e.typeIds != typeIds) {
      if (++failed > 5) continue;
      std::ostringstream g, w;
      for (std::size_t i = 0; i < e.ids.size(); ++i) g << e.ids[i] << "'" << e.tokens[i] << "' ";
      for (int64_t id : ids) w << id << " ";
      ADD_FAILURE() << name << ": " << json(text).dump() << "\n  got  " << g.str() << "\n  want "
                    << w.str();
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << ref["cases"].size() << " cases differ";
}

TEST(GgufVocabulary, Llama2FromScoresEqualsHuggingFace) {
  if (!fs::exists(sharedTokenizer("llama2"))) GTEST_SKIP() << "no ../shared/data/tokenizers";
  const json tj = readJson(sharedTokenizer("llama2"));
  const GgufVocabulary v = llama2Vocabulary(tj);
  // The merges rebuilt from the scores are the file's, one by one (58,980 of them).
  const auto merges = sentencePieceMerges(v);
  const json& fileMerges = tj["model"]["merges"];
  ASSERT_EQ(merges.size(), fileMerges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    ASSERT_EQ(merges[i].first + " " + merges[i].second, fileMerges[i].get<std::string>())
        << "rank " << i;
  }
  expectReference(tokenizerFromGguf(v), reference("llama2"), std::nullopt, "llama2");
}

TEST(GgufVocabulary, Llama3ByteLevelEqualsHuggingFace) {
  if (!fs::exists(sharedTokenizer("llama3"))) GTEST_SKIP() << "no ../shared/data/tokenizers";
  const HfTokenizer tok = tokenizerFromGguf(llama3Vocabulary(readJson(sharedTokenizer("llama3"))));
  expectReference(tok, reference("llama3"), 128000, "llama3");
}

TEST(GgufVocabulary, Qwen3ByteLevelEqualsHuggingFace) {
  if (!fs::exists(sharedTokenizer("qwen3"))) GTEST_SKIP() << "no ../shared/data/tokenizers";
  const HfTokenizer tok = tokenizerFromGguf(qwen3Vocabulary(readJson(sharedTokenizer("qwen3"))));
  expectReference(tok, reference("qwen3"), std::nullopt, "qwen3");
  // <tool_call> is user-defined (found in the text, not special), <|im_end|> control.
  const std::vector<Token> t = tok.encode("<tool_call><|im_end|>");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].id, 151657);
  EXPECT_FALSE(t[0].special);
  EXPECT_EQ(t[1].id, 151645);
  EXPECT_TRUE(t[1].special);
  EXPECT_EQ(tok.tokenOf(151700).text, "[PAD151700]");
}

TEST(GgufVocabulary, BertPhantomSpaceVocabularyEqualsHuggingFace) {
  const json tj = readJson(fs::path(ATTNSCOPE_TEST_DATA) / "tokenizers" / "wordpiece.json");
  expectReference(tokenizerFromGguf(bertVocabulary(tj)), reference("wordpiece"), std::nullopt,
                  "wordpiece");
}

// ---- toy vocabularies: always run ------------------------------------------------------------

/// <unk> <s> </s>, the 256 byte pieces, then the given pieces with their scores.
GgufVocabulary toyLlama(const std::vector<std::pair<std::string, float>>& pieces) {
  GgufVocabulary v;
  v.model = "llama";
  v.source = "toy.gguf";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.tokenTypes = {type(GgufTokenType::Unknown), type(GgufTokenType::Control),
                  type(GgufTokenType::Control)};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.tokens.push_back(name);
    v.tokenTypes.push_back(type(GgufTokenType::Byte));
    v.scores.push_back(0);
  }
  for (const auto& [piece, score] : pieces) {
    v.tokens.push_back(piece);
    v.tokenTypes.push_back(type(GgufTokenType::Normal));
    v.scores.push_back(score);
  }
  return v;
}

std::vector<int64_t> ids(const HfTokenizer& tok, const std::string& text) {
  return tok.encodeIds(text).ids;
}

constexpr int64_t kFirstPiece = 259;  // after <unk> <s> </s> and 256 bytes

TEST(GgufVocabulary, LlamaMergesTheHighestScoringPairFirst) {
  // "abc": ab and bc compete for the b; the higher score wins.
  auto v = toyLlama({{"a", -10}, {"b", -11}, {"c", -12}, {"ab", -1}, {"bc", -2}});
  v.addBos = false;
  v.addSpacePrefix = false;
  const int64_t a = kFirstPiece, b = a + 1, c = a + 2, ab = a + 3, bc = a + 4;
  EXPECT_EQ(ids(tokenizerFromGguf(v), "abc"), (std::vector<int64_t>{ab, c}));
  v.scores[static_cast<std::size_t>(bc)] = 0;  // now bc outranks ab
  EXPECT_EQ(ids(tokenizerFromGguf(v), "abc"), (std::vector<int64_t>{a, bc}));
  // Equal scores: the lower id ranks first, as in transformers' ordering.
  v.scores[static_cast<std::size_t>(ab)] = v.scores[static_cast<std::size_t>(bc)] = -1;
  EXPECT_EQ(ids(tokenizerFromGguf(v), "abc"), (std::vector<int64_t>{ab, c}));
  (void)b;
}

TEST(GgufVocabulary, LlamaSpacePrefixByteFallbackBosAndControlTokens) {
  auto v = toyLlama({{"\xE2\x96\x81", -1},
                     {"a", -2},
                     {"\xE2\x96\x81"
                      "a",
                      -3}});
  const int64_t space = kFirstPiece, a = space + 1, spaceA = space + 2;
  HfTokenizer tok = tokenizerFromGguf(v);  // defaults: add_bos, add_space_prefix
  EXPECT_EQ(ids(tok, "a"), (std::vector<int64_t>{1, spaceA}));
  // é is no piece: its two bytes, as <0xC3> <0xA9>; "</s>" in the text is the control token.
  EXPECT_EQ(ids(tok, "a\xC3\xA9</s>"), (std::vector<int64_t>{1, spaceA, 3 + 0xC3, 3 + 0xA9, 2}));
  const std::vector<Token> t = tok.encode("a\xC3\xA9</s>");
  EXPECT_TRUE(t[0].special);
  EXPECT_TRUE(t[4].special);
  EXPECT_EQ(t[1].text, " a");
  EXPECT_EQ(tok.tokenOf(spaceA).text, " a");
  v.addSpacePrefix = false;
  v.addBos = false;
  v.addEos = true;
  tok = tokenizerFromGguf(v);
  EXPECT_EQ(ids(tok, "a a"), (std::vector<int64_t>{a, spaceA, 2}));
  // No byte pieces: an unknown character is <unk>.
  v = toyLlama({{"a", -1}});
  v.tokens.resize(3);
  v.tokens.push_back("a");
  v.tokenTypes = {type(GgufTokenType::Unknown), type(GgufTokenType::Control),
                  type(GgufTokenType::Control), type(GgufTokenType::Normal)};
  v.scores = {0, 0, 0, -1};
  v.addSpacePrefix = false;
  // Unknown characters in a row are one <unk>, as SentencePiece gives them.
  const std::vector<Token> u = tokenizerFromGguf(v).encode("a\xC3\xA9\xE2\x82\xAC");
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[2].id, 0);
  EXPECT_TRUE(u[2].unknown);
  EXPECT_EQ(u[2].byteEnd - u[2].byteBegin, 5u);
  // An empty token string reads as llama.cpp names it.
  v.tokens.push_back("");
  v.tokenTypes.push_back(type(GgufTokenType::Normal));
  v.scores.push_back(-2);
  EXPECT_EQ(tokenizerFromGguf(v).tokenOf(4).text, "[EMPTY_4]");
}

/// A byte-level vocabulary for "hello world": the letters, Ġ (space), and merges up to "hello".
GgufVocabulary toyGpt2(const std::string& pre) {
  GgufVocabulary v;
  v.model = "gpt2";
  v.pre = pre;
  v.source = "toy.gguf";
  for (const char* t : {"h", "e", "l", "o", "w", "r", "d", "\xC4\xA0", "1", "2", "he", "ll", "hell",
                        "hello", "\xC4\xA0w", "12", "<|end|>", "<think>", "world"}) {
    v.tokens.push_back(t);
    v.tokenTypes.push_back(type(GgufTokenType::Normal));
  }
  v.tokenTypes[16] = type(GgufTokenType::Control);
  v.tokenTypes[17] = type(GgufTokenType::UserDefined);
  v.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "1 2"};
  v.bosId = 16;
  return v;
}

TEST(GgufVocabulary, Gpt2MergesPreTokenizerAndAddedTokens) {
  HfTokenizer tok = tokenizerFromGguf(toyGpt2("gpt-2"));
  EXPECT_EQ(ids(tok, "hello world"), (std::vector<int64_t>{13, 14, 3, 5, 2, 6}));
  const std::vector<Token> t = tok.encode("hello<|end|> <think>12");
  std::vector<int64_t> got;
  for (const Token& x : t) got.push_back(x.id);
  EXPECT_EQ(got, (std::vector<int64_t>{13, 16, 7, 17, 15}));
  EXPECT_TRUE(t[1].special);
  EXPECT_FALSE(t[3].special);
  EXPECT_EQ(t[2].text, " ");
  // smollm splits digits one by one before the merges see them; llama-bpe adds the BOS.
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("smollm")), "12"), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("llama-bpe")), "12"), (std::vector<int64_t>{16, 15}));
  // Llama 3's BPE takes a word the vocabulary has whole, whatever the merges say (ignore_merges).
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("llama-bpe")), "world"), (std::vector<int64_t>{16, 18}));
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("gpt-2")), "world"),
            (std::vector<int64_t>{4, 3, 5, 2, 6}));
  // Without a pre-tokenizer name, llama.cpp's default: digits in groups of three ("121" "2").
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("gpt-2")), "1212"), (std::vector<int64_t>{15, 15}));
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("")), "1212"), (std::vector<int64_t>{15, 8, 9}));
  EXPECT_EQ(ids(tokenizerFromGguf(toyGpt2("default")), "1212"), (std::vector<int64_t>{15, 8, 9}));
}

void expectRefused(const GgufVocabulary& v, const std::string& words) {
  try {
    tokenizerFromGguf(v);
    ADD_FAILURE() << "no error for " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Format);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("toy.gguf: ", 0), 0u) << e.what();
  }
}

TEST(GgufVocabulary, UnsupportedOrMalformedVocabulariesAreRefusedByName) {
  expectRefused(toyGpt2("tekken-9"),
                "tokenizer.ggml.pre \"tekken-9\" is a pre-tokenizer "
                "attnscope does not know (supported: default, llama-bpe");
  GgufVocabulary v = toyGpt2("gpt-2");
  v.model = "t5";
  expectRefused(v, "tokenizer.ggml.model \"t5\" is a tokenizer attnscope cannot read yet");
  v = toyGpt2("gpt-2");
  v.tokens[3] = "h";
  expectRefused(v, "tokenizer.ggml.tokens holds \"h\" twice (ids 0 and 3)");
  v = toyGpt2("gpt-2");
  v.bosId = 99;
  expectRefused(v, "tokenizer.ggml.bos_token_id is 99, outside the 19 tokens");
  v = toyGpt2("llama-bpe");
  v.bosId.reset();
  expectRefused(v, "tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not");
  v = toyGpt2("gpt-2");
  v.merges.push_back("hello");
  expectRefused(v, "tokenizer.ggml.merges[6] \"hello\" is not two tokens");
  v.merges.back() = std::string(100, 'x');
  expectRefused(v, "tokenizer.ggml.merges[6] \"" + std::string(48, 'x') + "\"... is not");
  v = toyGpt2("gpt-2");
  v.merges.push_back("x y");
  expectRefused(v, "model");
  v = toyGpt2("gpt-2");
  v.tokens[5] = "\xFF";
  expectRefused(v, "tokenizer.ggml.tokens[5] is not valid UTF-8");
  v = toyGpt2("gpt-2");
  v.tokenTypes.pop_back();
  expectRefused(v, "tokenizer.ggml.token_type has 18 entries for 19 tokens");
  v = toyLlama({});
  v.scores.push_back(1);
  expectRefused(v, "tokenizer.ggml.scores has 260 entries for 259 tokens");
  v.tokens.clear();
  expectRefused(v, "tokenizer.ggml.tokens is missing or empty");
}

}  // namespace gguf_vocabulary_test
}  // namespace
}  // namespace attnscope
