// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/gguf_vocabulary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "attnscope/error.h"
#include "attnscope/utf8.h"

namespace attnscope {

// A named namespace inside the anonymous one: the unity build joins this file with others whose
// file-local helpers may share these names.
namespace {
namespace gguf_vocabulary_detail {

using nlohmann::json;

constexpr const char* kSpace = "\xE2\x96\x81";  // "▁", SentencePiece's space

std::string where(const GgufVocabulary& v) {
  return v.source.empty() ? std::string("GGUF tokenizer") : v.source;
}

[[noreturn]] void refuse(const GgufVocabulary& v, const std::string& what) {
  throw Error(ErrorKind::Format, where(v) + ": " + what);
}

/// A string from the file for a message: quoted, and cut (at a character) when long.
std::string messageQuote(const std::string& s) {
  constexpr std::size_t kMax = 48;
  if (s.size() <= kMax) return "\"" + s + "\"";
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return "\"" + s.substr(0, cut) + "\"...";
}

// ---- the vocabulary, checked ---------------------------------------------------------------

/// The token strings with the checks llama.cpp makes when it loads them: an empty string reads as
/// "[EMPTY_<id>]", a duplicate is refused (ids would be ambiguous), per-token arrays match.
struct Checked {
  std::vector<std::string> tokens;
  std::unordered_map<std::string_view, uint32_t> ids;  // views into tokens
  std::vector<GgufTokenType> types;
};

Checked checkVocabulary(const GgufVocabulary& v, std::vector<std::string> tokens) {
  if (tokens.empty()) refuse(v, "tokenizer.ggml.tokens is missing or empty");
  if (tokens.size() > (1u << 30)) refuse(v, "tokenizer.ggml.tokens has too many tokens");
  const std::size_t n = tokens.size();
  auto sameLength = [&](std::size_t size, const char* key) {
    if (size != 0 && size != n) {
      refuse(v, std::string(key) + " has " + std::to_string(size) + " entries for " +
                    std::to_string(n) + " tokens");
    }
  };
  sameLength(v.scores.size(), "tokenizer.ggml.scores");
  sameLength(v.tokenTypes.size(), "tokenizer.ggml.token_type");
  for (float s : v.scores) {
    if (std::isnan(s)) refuse(v, "tokenizer.ggml.scores holds NaN");
  }
  Checked c;
  c.tokens = std::move(tokens);
  c.types.assign(n, GgufTokenType::Normal);
  for (std::size_t i = 0; i < v.tokenTypes.size(); ++i) {
    const int32_t t = v.tokenTypes[i];
    c.types[i] = t >= 0 && t <= 6 ? static_cast<GgufTokenType>(t) : GgufTokenType::Undefined;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (c.tokens[i].empty()) c.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";
    if (!isValidUtf8(c.tokens[i]))
      refuse(v, "tokenizer.ggml.tokens[" + std::to_string(i) + "] is not valid UTF-8");
  }
  c.ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = c.ids.emplace(c.tokens[i], static_cast<uint32_t>(i));
    if (!fresh) {
      refuse(v, "tokenizer.ggml.tokens holds " + messageQuote(c.tokens[i]) + " twice (ids " +
                    std::to_string(it->second) + " and " + std::to_string(i) + ")");
    }
  }
  const std::pair<const std::optional<int64_t>*, const char*> specials[] = {
      {&v.bosId, "tokenizer.ggml.bos_token_id"},
      {&v.eosId, "tokenizer.ggml.eos_token_id"},
      {&v.unkId, "tokenizer.ggml.unknown_token_id"},
      {&v.sepId, "tokenizer.ggml.seperator_token_id"},
      {&v.padId, "tokenizer.ggml.padding_token_id"},
      {&v.clsId, "tokenizer.ggml.cls_token_id"},
      {&v.maskId, "tokenizer.ggml.mask_token_id"},
  };
  for (const auto& [id, key] : specials) {
    if (*id && (**id < 0 || static_cast<std::size_t>(**id) >= n)) {
      refuse(v, std::string(key) + " is " + std::to_string(**id) + ", outside the " +
                    std::to_string(n) + " tokens");
    }
  }
  return c;
}

// ---- pieces of tokenizer.json ----------------------------------------------------------------

using Merges = std::vector<std::pair<std::string, std::string>>;

/// A tokenizer.json without its model's vocab and merges, which tokenizerText writes.
struct TokenizerJson {
  json j;
  Merges merges;  // BPE only
};

/// s as a JSON string (s is valid UTF-8).
void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += ch;
    }
  }
  out += '"';
}

/// The text of tokenizer.json. The vocabulary and the merges (Llama 3: 128,256 and 280,147) are
/// written directly: as nlohmann values they cost more than building the pipeline from the text.
std::string tokenizerText(TokenizerJson t, const Checked& c, bool withMerges) {
  json model = std::move(t.j["model"]);
  t.j.erase("model");
  std::string m = model.dump();
  m.pop_back();  // the closing brace
  m += m.size() > 1 ? ",\"vocab\":{" : "\"vocab\":{";
  for (std::size_t i = 0; i < c.tokens.size(); ++i) {
    if (i) m += ',';
    appendJsonString(m, c.tokens[i]);
    m += ':';
    m += std::to_string(i);
  }
  m += '}';
  if (withMerges) {
    m += ",\"merges\":[";
    for (std::size_t k = 0; k < t.merges.size(); ++k) {
      m += k ? ",[" : "[";
      appendJsonString(m, t.merges[k].first);
      m += ',';
      appendJsonString(m, t.merges[k].second);
      m += ']';
    }
    m += ']';
  }
  m += '}';
  std::string text = t.j.dump();
  text.pop_back();
  text += text.size() > 1 ? ",\"model\":" : "\"model\":";
  return text + m + '}';
}

/// Control and unknown tokens are what llama.cpp finds in the text before tokenizing (its
/// tokenizer_st_partition) and what Hugging Face lists as special added tokens; user-defined
/// ones are found the same way but are not special. Neither is normalized first.
json addedTokensJson(const Checked& c) {
  json added = json::array();
  for (std::size_t i = 0; i < c.tokens.size(); ++i) {
    const GgufTokenType t = c.types[i];
    if (t != GgufTokenType::Control && t != GgufTokenType::UserDefined &&
        t != GgufTokenType::Unknown)
      continue;
    added.push_back({{"id", i},
                     {"content", c.tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", t != GgufTokenType::UserDefined}});
  }
  return added;
}

/// The special token put before the text, after it, and between a pair's texts.
struct Wrapping {
  std::optional<int64_t> first;    // bos / cls
  std::optional<int64_t> last;     // eos / sep
  bool repeatFirstForPair = true;  // "<s> A <s> B" (Llama) rather than "[CLS] A [SEP] B [SEP]"
};

json templateJson(const Checked& c, const Wrapping& w) {
  if (!w.first && !w.last) return nullptr;
  json specials = json::object();
  auto special = [&](int64_t id, int typeId) {
    const std::string& token = c.tokens[static_cast<std::size_t>(id)];
    specials[token] = {{"id", token}, {"ids", {id}}, {"tokens", {token}}};
    return json{{"SpecialToken", {{"id", token}, {"type_id", typeId}}}};
  };
  auto sequence = [](const char* id, int typeId) {
    return json{{"Sequence", {{"id", id}, {"type_id", typeId}}}};
  };
  json single = json::array(), pair = json::array();
  if (w.first) single.push_back(special(*w.first, 0));
  single.push_back(sequence("A", 0));
  if (w.last) single.push_back(special(*w.last, 0));
  pair = single;
  if (w.first && w.repeatFirstForPair) pair.push_back(special(*w.first, 1));
  pair.push_back(sequence("B", 1));
  if (w.last) pair.push_back(special(*w.last, 1));
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", pair},
          {"special_tokens", specials}};
}

std::optional<int64_t> firstOfType(const Checked& c, GgufTokenType type) {
  for (std::size_t i = 0; i < c.types.size(); ++i) {
    if (c.types[i] == type) return static_cast<int64_t>(i);
  }
  return std::nullopt;
}

/// The id of a special token: the file's, else llama.cpp's default for the model when that id
/// exists (SentencePiece files from before the keys were written rely on <unk> 0, <s> 1, </s> 2).
std::optional<int64_t> idOr(const std::optional<int64_t>& id, int64_t fallback, const Checked& c) {
  if (id) return id;
  if (fallback >= 0 && static_cast<std::size_t>(fallback) < c.tokens.size()) return fallback;
  return std::nullopt;
}

std::optional<int64_t> wanted(bool add, const std::optional<int64_t>& id, const GgufVocabulary& v,
                              const char* addKey, const char* idKey) {
  if (!add) return std::nullopt;
  if (!id) refuse(v, std::string(addKey) + " is true, but " + idKey + " is not set");
  return id;
}

// ---- "llama": SentencePiece BPE --------------------------------------------------------------

/// Hugging Face's merges for a SentencePiece BPE vocabulary (transformers' SentencePieceExtractor
/// with the model's scores): every split of a piece into two pieces is a merge (pieces are whole
/// characters, so only splits between characters find both halves); a piece's splits are ordered by
/// (left id, right id), then all merges by the merged piece's score, highest first, keeping id
/// order among equal scores. Applying them lowest rank first is SentencePiece's own rule (merge the
/// adjacent pair whose piece scores highest).
std::vector<std::pair<std::string, std::string>> mergesFromScores(const GgufVocabulary& v,
                                                                  const Checked& c) {
  struct Merge {
    float score;
    uint32_t left, right;
  };
  std::vector<Merge> merges;
  std::vector<Merge> local;
  for (std::size_t id = 0; id < c.tokens.size(); ++id) {
    const std::string& t = c.tokens[id];
    local.clear();
    for (std::size_t k = 1; k < t.size(); ++k) {
      const auto l = c.ids.find(std::string_view(t).substr(0, k));
      if (l == c.ids.end()) continue;
      const auto r = c.ids.find(std::string_view(t).substr(k));
      if (r == c.ids.end()) continue;
      local.push_back({v.scores.empty() ? 0.0f : v.scores[id], l->second, r->second});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return std::make_pair(a.left, a.right) < std::make_pair(b.left, b.right);
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) out.emplace_back(c.tokens[m.left], c.tokens[m.right]);
  return out;
}

/// Llama 2's tokenizer.json, as transformers' LlamaConverter writes it (legacy form: the space
/// prefix on every piece between added tokens, as Hugging Face does).
TokenizerJson llamaJson(const GgufVocabulary& v, const Checked& c) {
  const bool spacePrefix = v.addSpacePrefix.value_or(true);
  bool byteFallback = false;
  for (GgufTokenType t : c.types) byteFallback = byteFallback || t == GgufTokenType::Byte;
  const std::optional<int64_t> unk = v.unkId ? v.unkId : firstOfType(c, GgufTokenType::Unknown);

  TokenizerJson out;
  json& j = out.j;
  json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}};
  j["normalizer"] =
      spacePrefix ? json{{"type", "Sequence"},
                         {"normalizers", {{{"type", "Prepend"}, {"prepend", kSpace}}, replace}}}
                  : replace;
  j["pre_tokenizer"] = nullptr;
  out.merges = mergesFromScores(v, c);
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", unk ? json(c.tokens[static_cast<std::size_t>(*unk)]) : json()},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", true},
                {"byte_fallback", byteFallback}};
  json decoders =
      json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}}});
  if (spacePrefix)
    decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  Wrapping w;
  w.first = wanted(v.addBos.value_or(true), idOr(v.bosId, 1, c), v, "tokenizer.ggml.add_bos_token",
                   "tokenizer.ggml.bos_token_id");
  w.last = wanted(v.addEos.value_or(false), idOr(v.eosId, 2, c), v, "tokenizer.ggml.add_eos_token",
                  "tokenizer.ggml.eos_token_id");
  j["post_processor"] = templateJson(c, w);
  return out;
}

// ---- "gpt2": byte-level BPE ------------------------------------------------------------------

json splitJson(const char* regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

json byteLevelJson(bool useRegex, bool trimOffsets = true) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", trimOffsets},
          {"use_regex", useRegex}};
}

// The Split patterns of the models' tokenizer.json files, verbatim (llama.cpp rewrites the
// case-insensitive group for its own engine; Oniguruma reads the original).
constexpr const char* kLlama3Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2Regex =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

/// What one tokenizer.ggml.pre stands for: the Hugging Face normalizer and pre-tokenizer of the
/// models the converter gives that name, and their BPE's ignore_merges.
struct PreTokenizerForm {
  json normalizer;
  json preTokenizer;
  bool ignoreMerges = false;
  bool addBosByDefault = false;  // llama.cpp's default where add_bos_token is absent
};

const char* const kSupportedPre[] = {"default", "llama-bpe", "llama3", "llama-v3", "qwen2",
                                     "gpt-2",   "phi-2",     "smollm", "starcoder"};

std::optional<PreTokenizerForm> preTokenizerForm(const std::string& pre) {
  PreTokenizerForm f;
  f.normalizer = nullptr;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {  // Llama 3, 3.1, 3.2
    f.preTokenizer = {{"type", "Sequence"},
                      {"pretokenizers", {splitJson(kLlama3Regex), byteLevelJson(false)}}};
    f.ignoreMerges = true;
    f.addBosByDefault = true;
  } else if (pre == "qwen2") {  // Qwen 1.5 / 2 / 2.5 / 3: NFC, single digits
    f.normalizer = {{"type", "NFC"}};
    f.preTokenizer = {{"type", "Sequence"},
                      {"pretokenizers", {splitJson(kQwen2Regex), byteLevelJson(false, false)}}};
  } else if (pre == "gpt-2" || pre == "phi-2") {  // GPT-2's regex inside ByteLevel
    f.preTokenizer = byteLevelJson(true);
  } else if (pre == "smollm" || pre == "starcoder") {  // digits one by one, then GPT-2's regex
    f.preTokenizer = {{"type", "Sequence"},
                      {"pretokenizers",
                       {{{"type", "Digits"}, {"individual_digits", true}}, byteLevelJson(true)}}};
  } else if (pre == "default") {
    // llama.cpp's own splitting for files without a pre-tokenizer name; no tokenizer.json has
    // it. Its regexes apply one after the other, each match and each gap a piece: Split Isolated.
    f.preTokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         {splitJson(R"re([\p{P}\$\+<=>\^~\|]+)re"),
          splitJson(
              R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re"),
          splitJson(R"re(\p{N}+)re"), splitJson(R"re([0-9][0-9][0-9])re"), byteLevelJson(false)}}};
  } else {
    return std::nullopt;
  }
  return f;
}

TokenizerJson gpt2Json(const GgufVocabulary& v, const Checked& c) {
  const std::string pre = v.pre.empty() ? "default" : v.pre;
  const std::optional<PreTokenizerForm> form = preTokenizerForm(pre);
  if (!form) {
    std::string list;
    for (const char* p : kSupportedPre) list += (list.empty() ? "" : ", ") + std::string(p);
    refuse(v, "tokenizer.ggml.pre " + messageQuote(pre) +
                  " is a pre-tokenizer attnscope does not know (supported: " + list + ")");
  }
  if (v.merges.empty()) refuse(v, "tokenizer.ggml.merges is missing or empty");
  TokenizerJson out;
  json& j = out.j;
  out.merges.reserve(v.merges.size());
  for (std::size_t i = 0; i < v.merges.size(); ++i) {
    // As llama.cpp reads them: split at the first space after the first byte.
    const std::string& m = v.merges[i];
    if (!isValidUtf8(m))
      refuse(v, "tokenizer.ggml.merges[" + std::to_string(i) + "] is not valid UTF-8");
    const std::size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      refuse(v, "tokenizer.ggml.merges[" + std::to_string(i) + "] " + messageQuote(m) +
                    " is not two tokens");
    }
    out.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }

  j["normalizer"] = form->normalizer;
  j["pre_tokenizer"] = form->preTokenizer;
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", form->ignoreMerges}};

  j["decoder"] = byteLevelJson(true);
  Wrapping w;
  w.first = wanted(v.addBos.value_or(form->addBosByDefault), v.bosId, v,
                   "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id");
  w.last = wanted(v.addEos.value_or(false), v.eosId, v, "tokenizer.ggml.add_eos_token",
                  "tokenizer.ggml.eos_token_id");
  j["post_processor"] = templateJson(c, w);
  return out;
}

// ---- "bert": WordPiece -----------------------------------------------------------------------

/// convert_hf_to_gguf stores BERT's vocabulary in "phantom space" form: a word-initial piece
/// gets "▁" in front, a continuation loses its "##", control tokens stay. This undoes it.
std::vector<std::string> wordPieceTokens(const GgufVocabulary& v) {
  std::vector<std::string> out;
  out.reserve(v.tokens.size());
  const std::string space = kSpace;
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    const int32_t type = i < v.tokenTypes.size() ? v.tokenTypes[i] : 1;
    const bool keep = type == static_cast<int32_t>(GgufTokenType::Control) ||
                      type == static_cast<int32_t>(GgufTokenType::Unknown) ||
                      (t.size() >= 2 && t.front() == '[' && t.back() == ']');
    if (t.compare(0, space.size(), space) == 0 && t.size() > space.size()) {
      out.push_back(t.substr(space.size()));
    } else if (keep || t.empty()) {
      out.push_back(t);
    } else {
      out.push_back("##" + t);
    }
  }
  return out;
}

TokenizerJson bertJson(const GgufVocabulary& v, const Checked& c) {
  const std::optional<int64_t> unk = v.unkId ? v.unkId : firstOfType(c, GgufTokenType::Unknown);
  TokenizerJson out;
  json& j = out.j;
  j["normalizer"] = {{"type", "BertNormalizer"},
                     {"clean_text", true},
                     {"handle_chinese_chars", true},
                     {"strip_accents", nullptr},
                     {"lowercase", v.lowercase.value_or(true)}};
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  j["model"] = {
      {"type", "WordPiece"},
      {"unk_token", unk ? c.tokens[static_cast<std::size_t>(*unk)] : std::string("[UNK]")},
      {"continuing_subword_prefix", "##"},
      {"max_input_chars_per_word", 100}};

  j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  Wrapping w;
  w.repeatFirstForPair = false;
  w.first = wanted(v.addBos.value_or(true), v.clsId ? v.clsId : v.bosId, v,
                   "tokenizer.ggml.add_bos_token", "tokenizer.ggml.cls_token_id or bos_token_id");
  w.last =
      wanted(v.addSep.value_or(true) || v.addEos.value_or(false), v.sepId ? v.sepId : v.eosId, v,
             "tokenizer.ggml.add_sep_token", "tokenizer.ggml.seperator_token_id or eos_token_id");
  j["post_processor"] = templateJson(c, w);
  return out;
}

HfTokenizer build(const GgufVocabulary& v) {
  if (v.model != "llama" && v.model != "gpt2" && v.model != "bert") {
    refuse(v, v.model.empty() ? std::string("tokenizer.ggml.model is missing")
                              : "tokenizer.ggml.model " + messageQuote(v.model) +
                                    " is a tokenizer attnscope cannot read yet (supported: "
                                    "llama, gpt2, bert)");
  }
  const Checked c = checkVocabulary(v, v.model == "bert" ? wordPieceTokens(v) : v.tokens);
  TokenizerJson t = v.model == "llama"  ? llamaJson(v, c)
                    : v.model == "gpt2" ? gpt2Json(v, c)
                                        : bertJson(v, c);
  t.j["added_tokens"] = addedTokensJson(c);
  t.j["version"] = "1.0";
  // Through tokenizer.json's text, which is what HfTokenizer reads.
  return HfTokenizer::fromJson(tokenizerText(std::move(t), c, v.model != "bert"), where(v));
}

}  // namespace gguf_vocabulary_detail
}  // namespace

HfTokenizer tokenizerFromGguf(const GgufVocabulary& v) { return gguf_vocabulary_detail::build(v); }

std::vector<std::pair<std::string, std::string>> sentencePieceMerges(const GgufVocabulary& v) {
  return gguf_vocabulary_detail::mergesFromScores(
      v, gguf_vocabulary_detail::checkVocabulary(v, v.tokens));
}

}  // namespace attnscope
