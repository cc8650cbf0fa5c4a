// SPDX-License-Identifier: GPL-3.0-or-later
// Pre-tokenizers of Hugging Face tokenizers (tokenizer.json "pre_tokenizer"). Every one of them is
// HF's NormalizedString::split: a pattern's matches over the piece, then a delimiter behaviour
// (SplitDelimiterBehavior) deciding what becomes of the matches; empty pieces are dropped.
#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizers/hf/components.h"
#include "tokenizers/hf/regex.h"
#include "tokenizers/hf/transform.h"
#include "tokenizers/hf/unicode_class.h"

namespace attnscope::hf {

namespace {

using detail::MatchList;

constexpr const char* kPreTokenizer = "pre_tokenizer";

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// ---- Character classes, as HF's Rust code tests them --------------------------------------------

/// char::is_ascii_punctuation || unicode_categories' is_punctuation (P*, Unicode 8.0 tables).
bool isPunctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  const uint32_t mask = U_MASK(u_charType(static_cast<UChar32>(c)));
  return (mask & U_GC_P_MASK) != 0 && detail::assignedBy(c, 8, 0);
}

/// char::is_numeric: Nd, Nl, No.
bool isNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const uint32_t mask = U_MASK(u_charType(static_cast<UChar32>(c)));
  return (mask & (U_GC_ND_MASK | U_GC_NL_MASK | U_GC_NO_MASK)) != 0;
}

// ---- Matching and splitting ---------------------------------------------------------------------

/// HF's find_matches for a Fn(char) -> bool pattern: every matching character is its own match.
template <class Pred>
MatchList matchChars(const std::string& text, Pred pred) {
  MatchList out;
  if (text.empty()) {
    out.push_back({{0, 0}, false});
    return out;
  }
  std::size_t lastOffset = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 0;
    const char32_t c = decodeAt(text, i, &len);
    if (pred(c)) {
      if (lastOffset < i) out.push_back({{lastOffset, i}, false});
      out.push_back({{i, i + len}, true});
      lastOffset = i + len;
    }
    i += len;
  }
  if (text.size() > lastOffset) out.push_back({{lastOffset, text.size()}, false});
  return out;
}

void invertMatches(MatchList& m) {
  for (auto& entry : m) entry.second = !entry.second;
}

/// HF's NormalizedString::split: the matches folded by the behaviour, then sliced.
std::vector<NormalizedString> splitByMatches(const NormalizedString& s, const MatchList& matches,
                                             Behavior behavior) {
  // (range, remove)
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> parts;
  parts.reserve(matches.size());
  switch (behavior) {
    case Behavior::Isolated:
      for (const auto& [range, isMatch] : matches) parts.push_back({range, false});
      break;
    case Behavior::Removed:
      parts = matches;
      break;
    case Behavior::Contiguous: {
      bool previous = false;
      for (const auto& [range, isMatch] : matches) {
        if (isMatch == previous && !parts.empty()) {
          parts.back().first.second = range.second;
        } else {
          parts.push_back({range, false});
        }
        previous = isMatch;
      }
      break;
    }
    case Behavior::MergedWithPrevious: {
      bool previous = false;
      for (const auto& [range, isMatch] : matches) {
        if (isMatch && !previous && !parts.empty()) {
          parts.back().first.second = range.second;
        } else {
          parts.push_back({range, false});
        }
        previous = isMatch;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool previous = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        const auto& [range, isMatch] = *it;
        if (isMatch && !previous && !parts.empty()) {
          parts.back().first.first = range.first;
        } else {
          parts.push_back({range, false});
        }
        previous = isMatch;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    }
  }
  std::vector<NormalizedString> out;
  out.reserve(parts.size());
  for (const auto& [range, remove] : parts) {
    if (!remove) out.push_back(s.slice(range.first, range.second));
  }
  return out;
}

/// HF's PreTokenizedString::split: fn(index, piece) for every piece that is not an added token;
/// empty results are dropped.
template <class F>
void splitEach(std::vector<Split>& splits, F fn) {
  std::vector<Split> out;
  out.reserve(splits.size());
  for (std::size_t i = 0; i < splits.size(); ++i) {
    if (splits[i].addedId >= 0) {
      out.push_back(std::move(splits[i]));
      continue;
    }
    for (NormalizedString& piece : fn(i, std::move(splits[i].text))) {
      if (!piece.empty()) out.push_back(Split{std::move(piece), -1});
    }
  }
  splits = std::move(out);
}

template <class Pred>
void splitOnChars(std::vector<Split>& splits, Pred pred, Behavior behavior) {
  splitEach(splits, [&](std::size_t, NormalizedString s) {
    return splitByMatches(s, matchChars(s.normalized(), pred), behavior);
  });
}

// ---- JSON ---------------------------------------------------------------------------------------

Behavior behaviorField(const nlohmann::json& j, const char* key, std::optional<Behavior> fallback) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    componentError(kPreTokenizer, std::string("\"") + key + "\" is missing");
  }
  const std::string b = j[key].is_string() ? j[key].get<std::string>() : std::string();
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  componentError(kPreTokenizer, std::string("\"") + key +
                                    "\" must be one of Removed, Isolated, MergedWithPrevious, " +
                                    "MergedWithNext, Contiguous (got " + j[key].dump() + ")");
}

/// A single character from a JSON string (Rust char fields).
char32_t charField(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string())
    componentError(kPreTokenizer, std::string("\"") + key + "\" must be a string");
  const std::string s = j[key].get<std::string>();
  std::size_t len = 0;
  const char32_t c = s.empty() ? 0 : decodeAt(s, 0, &len);
  if (s.empty() || len != s.size())
    componentError(kPreTokenizer, std::string("\"") + key + "\" must be one character");
  return c;
}

/// Split's / Replace's pattern: {"String": literal} or {"Regex": oniguruma pattern}.
class Pattern {
 public:
  explicit Pattern(const nlohmann::json& p) {
    if (p.is_object() && p.contains("String") && p["String"].is_string()) {
      m_literal = p["String"].get<std::string>();
    } else if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
      m_regex = std::make_unique<Regex>(p["Regex"].get<std::string>());
    } else {
      componentError(kPreTokenizer, "\"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
    }
  }
  MatchList find(const std::string& text) const {
    return detail::matchListFromRanges(
        text.size(), m_regex ? m_regex->findAll(text) : detail::literalMatches(text, m_literal));
  }

 private:
  std::string m_literal;
  std::unique_ptr<Regex> m_regex;
};

// ---- The pre-tokenizers -------------------------------------------------------------------------

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex)
      : m_addPrefixSpace(addPrefixSpace), m_useRegex(useRegex) {}

  void preTokenize(std::vector<Split>& splits) const override {
    splitEach(splits, [&](std::size_t, NormalizedString s) {
      if (m_addPrefixSpace && !s.empty() && s.normalized()[0] != ' ') s.prepend(" ");
      if (!m_useRegex) return std::vector<NormalizedString>{std::move(s)};
      return splitByMatches(s,
                            detail::matchListFromRanges(s.size(), gpt2().findAll(s.normalized())),
                            Behavior::Isolated);
    });
    for (Split& s : splits) {
      if (s.addedId < 0) detail::byteLevelMap(s.text);
    }
  }

 private:
  static const Regex& gpt2() {
    static const Regex r(
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
    return r;
  }
  bool m_addPrefixSpace, m_useRegex;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  explicit SplitPreTokenizer(const nlohmann::json& j)
      : m_pattern(j.contains("pattern") ? j["pattern"] : nlohmann::json()),
        m_behavior(behaviorField(j, "behavior", std::nullopt)),
        m_invert(boolField(j, "invert", false, kPreTokenizer)) {}

  void preTokenize(std::vector<Split>& splits) const override {
    splitEach(splits, [&](std::size_t, NormalizedString s) {
      MatchList m = m_pattern.find(s.normalized());
      if (m_invert) invertMatches(m);
      return splitByMatches(s, m, m_behavior);
    });
  }

 private:
  Pattern m_pattern;
  Behavior m_behavior;
  bool m_invert;
};

enum class PrependScheme { Always, First, Never };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : m_replacement(replacement), m_scheme(scheme), m_split(split) {
    appendUtf8(m_rep, replacement);
  }

  void preTokenize(std::vector<Split>& splits) const override {
    splitEach(splits, [&](std::size_t, NormalizedString s) {
      detail::hfReplace(s, matchChars(s.normalized(), [](char32_t c) { return c == U' '; }), m_rep);
      const bool startsWithRep = s.normalized().compare(0, m_rep.size(), m_rep) == 0;
      if (!s.empty() && !startsWithRep) {
        // "first": only the piece that starts the input (its original offset is 0).
        if (m_scheme == PrependScheme::Always ||
            (m_scheme == PrependScheme::First && s.spanOf(0).begin == 0)) {
          s.prepend(m_rep);
        }
      }
      if (!m_split) return std::vector<NormalizedString>{std::move(s)};
      const char32_t r = m_replacement;
      return splitByMatches(s, matchChars(s.normalized(), [r](char32_t c) { return c == r; }),
                            Behavior::MergedWithNext);
    });
  }

 private:
  char32_t m_replacement;
  std::string m_rep;
  PrependScheme m_scheme;
  bool m_split;
};

/// \w+|[^\w\s]+ (Rust regex classes), inverted and removed: runs of word characters and runs of
/// other non-space characters are the pieces.
class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  void preTokenize(std::vector<Split>& splits) const override {
    splitEach(splits, [](std::size_t, NormalizedString s) {
      const std::string& text = s.normalized();
      std::vector<std::pair<std::size_t, std::size_t>> runs;
      int runKind = 0;  // 0: none, 1: word run, 2: other run
      for (std::size_t i = 0; i < text.size();) {
        std::size_t len = 0;
        const char32_t c = decodeAt(text, i, &len);
        const int kind = isWordChar(c) ? 1 : isWhitespace(c) ? 0 : 2;
        if (kind != 0 && kind == runKind) {
          runs.back().second = i + len;
        } else if (kind != 0) {
          runs.emplace_back(i, i + len);
        }
        runKind = kind;
        i += len;
      }
      MatchList m = detail::matchListFromRanges(text.size(), runs);
      invertMatches(m);
      return splitByMatches(s, m, Behavior::Removed);
    });
  }
};

class WhitespaceSplitPreTokenizer final : public PreTokenizer {
 public:
  void preTokenize(std::vector<Split>& splits) const override {
    splitOnChars(
        splits, [](char32_t c) { return isWhitespace(c); }, Behavior::Removed);
  }
};

class BertPreTokenizer final : public PreTokenizer {
 public:
  void preTokenize(std::vector<Split>& splits) const override {
    splitOnChars(
        splits, [](char32_t c) { return isWhitespace(c); }, Behavior::Removed);
    splitOnChars(splits, isPunctuation, Behavior::Isolated);
  }
};

class PunctuationPreTokenizer final : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(Behavior b) : m_behavior(b) {}
  void preTokenize(std::vector<Split>& splits) const override {
    splitOnChars(splits, isPunctuation, m_behavior);
  }

 private:
  Behavior m_behavior;
};

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : m_individual(individual) {}
  void preTokenize(std::vector<Split>& splits) const override {
    splitOnChars(splits, isNumeric, m_individual ? Behavior::Isolated : Behavior::Contiguous);
  }

 private:
  bool m_individual;
};

class CharDelimiterSplitPreTokenizer final : public PreTokenizer {
 public:
  explicit CharDelimiterSplitPreTokenizer(char32_t d) : m_delimiter(d) {}
  void preTokenize(std::vector<Split>& splits) const override {
    const char32_t d = m_delimiter;
    splitOnChars(
        splits, [d](char32_t c) { return c == d; }, Behavior::Removed);
  }

 private:
  char32_t m_delimiter;
};

/// Pieces of `length` characters each (the last may be shorter).
class FixedLengthPreTokenizer final : public PreTokenizer {
 public:
  explicit FixedLengthPreTokenizer(std::size_t length) : m_length(length) {}
  void preTokenize(std::vector<Split>& splits) const override {
    splitEach(splits, [&](std::size_t, NormalizedString s) {
      std::vector<NormalizedString> out;
      const std::string& text = s.normalized();
      std::size_t start = 0;
      std::size_t count = 0;
      for (std::size_t i = 0; i < text.size();) {
        i += std::min(utf8Length(static_cast<unsigned char>(text[i])), text.size() - i);
        if (++count == m_length) {
          out.push_back(s.slice(start, i));
          start = i;
          count = 0;
        }
      }
      if (start < text.size()) out.push_back(s.slice(start, text.size()));
      return out;
    });
  }

 private:
  std::size_t m_length;
};

/// Splits where the script changes (SentencePiece's rules: Hiragana, Katakana and U+30FC count as
/// Han; spaces and characters of no script belong to whatever run they are in).
class UnicodeScriptsPreTokenizer final : public PreTokenizer {
 public:
  void preTokenize(std::vector<Split>& splits) const override {
    splitEach(splits, [](std::size_t, NormalizedString s) {
      const std::string& text = s.normalized();
      constexpr int kNone = -2;
      constexpr int kAny = -1;
      int last = kNone;
      std::vector<std::size_t> cuts;
      for (std::size_t i = 0; i < text.size();) {
        std::size_t len = 0;
        const char32_t c = decodeAt(text, i, &len);
        const int script = fixedScript(c);
        if (script != kAny && last != kAny && last != script) cuts.push_back(i);
        if (script != kAny) last = script;
        i += len;
      }
      cuts.push_back(text.size());
      std::vector<NormalizedString> out;
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
        out.push_back(s.slice(cuts[k], cuts[k + 1]));
      return out;
    });
  }

 private:
  /// HF's table is Unicode 9.0's Scripts.txt; a character it does not list is "Any".
  static int fixedScript(char32_t c) {
    if (c == 0x30FC) return USCRIPT_HAN;
    if (c == U' ') return -1;
    if (!detail::assignedBy(c, 9, 0)) return -1;
    UErrorCode st = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(static_cast<UChar32>(c), &st);
    if (U_FAILURE(st) || script == USCRIPT_UNKNOWN) return -1;
    if (script == USCRIPT_HIRAGANA || script == USCRIPT_KATAKANA) return USCRIPT_HAN;
    return static_cast<int>(script);
  }
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : m_parts(std::move(parts)) {}
  void preTokenize(std::vector<Split>& splits) const override {
    for (const auto& p : m_parts) p->preTokenize(splits);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> m_parts;
};

std::unique_ptr<PreTokenizer> makeMetaspace(const nlohmann::json& j) {
  const char32_t replacement = charField(j, "replacement");
  PrependScheme scheme = PrependScheme::Always;
  const bool hasScheme = j.contains("prepend_scheme") && !j["prepend_scheme"].is_null();
  if (hasScheme) {
    const std::string s =
        j["prepend_scheme"].is_string() ? j["prepend_scheme"].get<std::string>() : std::string();
    if (s == "always") {
      scheme = PrependScheme::Always;
    } else if (s == "first") {
      scheme = PrependScheme::First;
    } else if (s == "never") {
      scheme = PrependScheme::Never;
    } else {
      componentError(kPreTokenizer,
                     "\"prepend_scheme\" must be \"always\", \"first\" or \"never\" (got " +
                         j["prepend_scheme"].dump() + ")");
    }
  }
  if (!boolField(j, "add_prefix_space", true, kPreTokenizer)) {
    // Older files: add_prefix_space false means never; it contradicts an explicit other scheme.
    if (hasScheme && scheme != PrependScheme::Never) {
      componentError(kPreTokenizer, "add_prefix_space does not match declared prepend_scheme");
    }
    scheme = PrependScheme::Never;
  }
  return std::make_unique<MetaspacePreTokenizer>(replacement, scheme,
                                                 boolField(j, "split", true, kPreTokenizer));
}

}  // namespace

std::unique_ptr<PreTokenizer> makePreTokenizer(const nlohmann::json& json) {
  const std::string type = componentType(json, kPreTokenizer);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(
        boolField(json, "add_prefix_space", true, kPreTokenizer),
        boolField(json, "use_regex", true, kPreTokenizer));
  }
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(json);
  if (type == "Metaspace") return makeMetaspace(json);
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Punctuation") {
    return std::make_unique<PunctuationPreTokenizer>(
        behaviorField(json, "behavior", Behavior::Isolated));
  }
  if (type == "Digits")
    return std::make_unique<DigitsPreTokenizer>(
        boolField(json, "individual_digits", false, kPreTokenizer));
  if (type == "CharDelimiterSplit")
    return std::make_unique<CharDelimiterSplitPreTokenizer>(charField(json, "delimiter"));
  if (type == "FixedLength") {
    std::size_t length = 5;
    if (json.contains("length") && !json["length"].is_null()) {
      if (!json["length"].is_number_unsigned() || json["length"].get<std::size_t>() == 0) {
        componentError(kPreTokenizer, "FixedLength \"length\" must be a positive integer");
      }
      length = json["length"].get<std::size_t>();
    }
    return std::make_unique<FixedLengthPreTokenizer>(length);
  }
  if (type == "UnicodeScripts") return std::make_unique<UnicodeScriptsPreTokenizer>();
  if (type == "Sequence") {
    if (!json.contains("pretokenizers") || !json["pretokenizers"].is_array()) {
      componentError(kPreTokenizer, "Sequence needs a \"pretokenizers\" array");
    }
    const SequenceNesting nesting(kPreTokenizer);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const nlohmann::json& part : json["pretokenizers"]) {
      if (!part.is_null()) parts.push_back(makePreTokenizer(part));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  componentError(kPreTokenizer,
                 "type \"" + type +
                     "\" is not supported; supported: ByteLevel, Split, Metaspace, Whitespace, "
                     "WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit, "
                     "FixedLength, UnicodeScripts, Sequence");
}

}  // namespace attnscope::hf
