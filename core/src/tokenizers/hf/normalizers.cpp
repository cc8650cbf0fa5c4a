// SPDX-License-Identifier: GPL-3.0-or-later
// Normalizers of Hugging Face tokenizers (tokenizer.json "normalizer"), with HF's exact alignment
// rules: every change is expressed as HF's NormalizedString::transform does it, a stream of
// (character, change) pairs, so each normalized byte points at the same original bytes as there.
#include <unicode/normalizer2.h>
#include <unicode/ubrk.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utext.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/error.h"
#include "tokenizers/hf/byte_level_alphabet.h"
#include "tokenizers/hf/components.h"
#include "tokenizers/hf/regex.h"
#include "tokenizers/hf/transform.h"
#include "tokenizers/hf/unicode_class.h"

namespace attnscope::hf {

// Shared with pre_tokenizers.cpp, which declares the same names.
namespace detail {

std::string lowercaseOf(char32_t c);

void hfTransform(NormalizedString& s, const CharChanges& dest, std::size_t initialOffset) {
  const std::string& text = s.normalized();
  const std::vector<Span>& spans = s.spans();
  std::size_t cursor = 0;  // byte offset of the next original character not yet consumed
  auto consume = [&] {
    if (cursor < text.size())
      cursor +=
          std::min(utf8Length(static_cast<unsigned char>(text[cursor])), text.size() - cursor);
  };
  for (std::size_t k = 0; k < initialOffset; ++k) consume();
  const Span atStart = s.originalSpan(0, 0);
  const Span atEnd = s.originalSpan(text.size(), text.size());
  std::string out;
  std::vector<Span> outSpans;
  out.reserve(text.size());
  outSpans.reserve(text.size());
  for (const auto& [c, change] : dest) {
    Span align;
    if (change > 0) {
      align = cursor < 1 ? atStart : spans[cursor - 1];
    } else {
      align = cursor < spans.size() ? spans[cursor] : atEnd;
      consume();
      for (int64_t k = 0; k < -change; ++k) consume();
    }
    const std::size_t before = out.size();
    appendUtf8(out, c);
    outSpans.insert(outSpans.end(), out.size() - before, align);
  }
  s.assign(std::move(out), std::move(outSpans));
}

void hfReplace(NormalizedString& s, const MatchList& matches, const std::string& content) {
  const std::string& text = s.normalized();
  const std::vector<Span>& spans = s.spans();
  const Span atStart = s.originalSpan(0, 0);
  std::string out;
  std::vector<Span> outSpans;
  out.reserve(text.size());
  outSpans.reserve(text.size());
  std::size_t lastEnd = 0;
  bool any = false;
  for (const auto& [range, isMatch] : matches) {
    if (!isMatch) continue;
    any = true;
    const auto [start, end] = range;
    out.append(text, lastEnd, start - lastEnd);
    outSpans.insert(outSpans.end(), spans.begin() + static_cast<std::ptrdiff_t>(lastEnd),
                    spans.begin() + static_cast<std::ptrdiff_t>(start));
    // Every inserted character is "new" (+1) after the whole match was consumed: it takes the
    // alignment of the match's last byte.
    const Span align = end < 1 ? atStart : spans[end - 1];
    out += content;
    outSpans.insert(outSpans.end(), content.size(), align);
    lastEnd = end;
  }
  if (!any) return;
  out.append(text, lastEnd, std::string::npos);
  outSpans.insert(outSpans.end(), spans.begin() + static_cast<std::ptrdiff_t>(lastEnd),
                  spans.end());
  s.assign(std::move(out), std::move(outSpans));
}

MatchList matchListFromRanges(std::size_t size,
                              const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
  MatchList out;
  if (size == 0) {
    out.push_back({{0, 0}, false});
    return out;
  }
  std::size_t prev = 0;
  for (const auto& [b, e] : ranges) {
    if (prev != b) out.push_back({{prev, b}, false});
    out.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != size) out.push_back({{prev, size}, false});
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> literalMatches(const std::string& text,
                                                                const std::string& needle) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (needle.empty()) {
    // The escaped empty pattern matches empty at every character boundary (Oniguruma's find_iter).
    for (std::size_t i = 0; i <= text.size();) {
      out.emplace_back(i, i);
      if (i == text.size()) break;
      i += std::min(utf8Length(static_cast<unsigned char>(text[i])), text.size() - i);
    }
    return out;
  }
  for (std::size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) {
    out.emplace_back(at, at + needle.size());
  }
  return out;
}

/// Rust's char::to_lowercase: the full lowercase mapping without context. The only
/// unconditional multi-character lowercase mapping in SpecialCasing is U+0130.
std::string lowercaseOf(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (c == 0x130) {
    appendUtf8(out, U'i');
    appendUtf8(out, 0x307);
  } else {
    appendUtf8(out, static_cast<char32_t>(u_tolower(static_cast<UChar32>(c))));
  }
  return out;
}

/// Whether c was assigned by Unicode major.minor. HF's unicode_categories tables are Unicode 8.0
/// and unicode-normalization-alignments' are Unicode 9.0; ICU is newer, so later characters are
/// left out to answer as those tables do.
bool assignedBy(char32_t c, int major, int minor) {
  UVersionInfo v;
  u_charAge(static_cast<UChar32>(c), v);
  return v[0] < major || (v[0] == major && v[1] <= minor);
}

/// Every byte to its character of GPT-2's byte alphabet: the first byte of a character replaces
/// it (0), the others are new (+1), so all take the character's span.
void byteLevelMap(NormalizedString& s) {
  const std::string& text = s.normalized();
  CharChanges changes;
  changes.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len =
        std::min(utf8Length(static_cast<unsigned char>(text[i])), text.size() - i);
    for (std::size_t k = 0; k < len; ++k) {
      std::size_t l = 0;
      changes.emplace_back(
          decodeAt(alphabetCharOfByte(static_cast<unsigned char>(text[i + k])), 0, &l),
          k > 0 ? 1 : 0);
    }
    i += len;
  }
  hfTransform(s, changes, 0);
}

}  // namespace detail

namespace {

using detail::assignedBy;
using detail::CharChanges;
using detail::hfTransform;

constexpr const char* kNormalizer = "normalizer";

// ---- Unicode data as HF's crates have it ------------------------------------------------------

/// unicode_categories' is_other: Cc, Cf (Unicode 8.0) and every private-use character (Co); no
/// Cn, no Cs.
bool isOther(char32_t c) {
  const int8_t t = u_charType(static_cast<UChar32>(c));
  if (t == U_PRIVATE_USE_CHAR) return true;
  return (t == U_CONTROL_CHAR || t == U_FORMAT_CHAR) && assignedBy(c, 8, 0);
}

/// BERT's is_control: \t \n \r count as whitespace, not control.
bool isBertControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return isOther(c);
}

/// BERT's is_whitespace: \t \n \r and char::is_whitespace.
bool isBertWhitespace(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || isWhitespace(c); }

bool isChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/// unicode_categories' is_mark_nonspacing (Mn, Unicode 8.0).
bool isMarkNonspacing(char32_t c) {
  return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK && assignedBy(c, 8, 0);
}

/// unicode-normalization-alignments' is_combining_mark (General_Category=Mark, Unicode 9.0).
bool isCombiningMark(char32_t c) {
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return (t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK) &&
         assignedBy(c, 9, 0);
}

std::vector<char32_t> charsOf(const std::string& s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 0;
    out.push_back(decodeAt(s, i, &len));
    i += len;
  }
  return out;
}

bool isAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char ch) { return static_cast<unsigned char>(ch) < 0x80; });
}

// ---- NormalizedString operations, as HF writes them ---------------------------------------------

template <class Keep>
void filterChars(NormalizedString& s, Keep keep) {
  int64_t removed = 0;
  std::size_t removedStart = 0;
  bool haveLast = false;
  char32_t last = 0;
  CharChanges changes;
  changes.reserve(s.size());
  for (char32_t c : charsOf(s.normalized())) {
    if (keep(c)) {
      if (haveLast) {
        changes.emplace_back(last, -removed);
      } else {
        removedStart = static_cast<std::size_t>(removed);
      }
      last = c;
      haveLast = true;
      removed = 0;
    } else {
      ++removed;
    }
  }
  if (haveLast) changes.emplace_back(last, -removed);
  hfTransform(s, changes, removedStart);
}

template <class Map>
void mapChars(NormalizedString& s, Map map) {
  CharChanges changes;
  changes.reserve(s.size());
  for (char32_t c : charsOf(s.normalized())) changes.emplace_back(map(c), 0);
  hfTransform(s, changes, 0);
}

void lowercase(NormalizedString& s) {
  if (isAscii(s.normalized())) {  // one byte per character, same spans
    std::string out = s.normalized();
    for (char& ch : out) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
    }
    std::vector<Span> spans = s.spans();
    s.assign(std::move(out), std::move(spans));
    return;
  }
  CharChanges changes;
  changes.reserve(s.size());
  for (char32_t c : charsOf(s.normalized())) {
    const std::vector<char32_t> lower = charsOf(detail::lowercaseOf(c));
    for (std::size_t k = 0; k < lower.size(); ++k) changes.emplace_back(lower[k], k > 0 ? 1 : 0);
  }
  hfTransform(s, changes, 0);
}

/// Strip: HF's lrstrip (char::is_whitespace at either end).
void stripEnds(NormalizedString& s, bool left, bool right) {
  const std::vector<char32_t> chars = charsOf(s.normalized());
  std::size_t leading = 0;
  std::size_t trailing = 0;
  if (left) {
    while (leading < chars.size() && isWhitespace(chars[leading])) ++leading;
  }
  if (right) {
    while (trailing < chars.size() - leading && isWhitespace(chars[chars.size() - 1 - trailing]))
      ++trailing;
  }
  if (leading == 0 && trailing == 0) return;
  CharChanges changes;
  for (std::size_t i = leading; i + trailing < chars.size(); ++i) changes.emplace_back(chars[i], 0);
  hfTransform(s, changes, leading);
}

// ---- Unicode normalization forms, as unicode-normalization-alignments produces them -----------

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combiningClass(char32_t c) {
  if (c < 0x300) return 0;
  return assignedBy(c, 9, 0) ? u_getCombiningClass(static_cast<UChar32>(c)) : 0;
}

struct Norm2 {
  const icu::Normalizer2* nfd = nullptr;
  const icu::Normalizer2* nfkd = nullptr;
  const icu::Normalizer2* nfc = nullptr;
};

const Norm2& norm2() {
  static const Norm2 n = [] {
    Norm2 r;
    UErrorCode st = U_ZERO_ERROR;
    r.nfd = icu::Normalizer2::getNFDInstance(st);
    r.nfkd = icu::Normalizer2::getNFKDInstance(st);
    r.nfc = icu::Normalizer2::getNFCInstance(st);
    if (U_FAILURE(st))
      componentError(kNormalizer,
                     std::string("ICU normalization data unavailable: ") + u_errorName(st));
    return r;
  }();
  return n;
}

/// The full decomposition of one character (Hangul arithmetically), first character marked 0 and
/// the rest +1, as the crate's Decompositions emits them before canonical ordering.
template <class Emit>
void decompose(char32_t c, bool compat, Emit emit) {
  if (c <= 0x7F) {
    emit(c);
    return;
  }
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t si = c - kSBase;
    emit(kLBase + si / kNCount);
    emit(kVBase + (si % kNCount) / kTCount);
    if (si % kTCount > 0) emit(kTBase + si % kTCount);
    return;
  }
  if (assignedBy(c, 9, 0)) {
    icu::UnicodeString d;
    const icu::Normalizer2* n = compat ? norm2().nfkd : norm2().nfd;
    if (n->getDecomposition(static_cast<UChar32>(c), d)) {
      for (int32_t i = 0; i < d.length();) {
        const UChar32 cp = d.char32At(i);
        emit(static_cast<char32_t>(cp));
        i += U16_LENGTH(cp);
      }
      return;
    }
  }
  emit(c);
}

std::optional<char32_t> compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kNCount + (b - kVBase) * kTCount);
  }
  if (a >= kSBase && a < kSBase + kSCount && b > kTBase && b < kTBase + kTCount &&
      (a - kSBase) % kTCount == 0) {
    return a + (b - kTBase);
  }
  if (b < 0x300 || !assignedBy(a, 9, 0) || !assignedBy(b, 9, 0)) return std::nullopt;
  const UChar32 r = norm2().nfc->composePair(static_cast<UChar32>(a), static_cast<UChar32>(b));
  if (r < 0 || !assignedBy(static_cast<char32_t>(r), 9, 0)) return std::nullopt;
  return static_cast<char32_t>(r);
}

/// Decomposition with canonical ordering: each run of non-starters is sorted stably by class,
/// and the changes travel with their characters.
CharChanges decomposeAll(const std::vector<char32_t>& chars, bool compat) {
  struct Item {
    uint8_t ccc;
    char32_t c;
    int64_t change;
  };
  std::vector<Item> items;
  items.reserve(chars.size());
  for (char32_t ch : chars) {
    bool first = true;
    decompose(ch, compat, [&](char32_t d) {
      items.push_back({combiningClass(d), d, first ? 0 : 1});
      first = false;
    });
  }
  for (std::size_t i = 0; i < items.size();) {
    if (items[i].ccc == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < items.size() && items[j].ccc != 0) ++j;
    std::stable_sort(items.begin() + static_cast<std::ptrdiff_t>(i),
                     items.begin() + static_cast<std::ptrdiff_t>(j),
                     [](const Item& x, const Item& y) { return x.ccc < y.ccc; });
    i = j;
  }
  CharChanges out;
  out.reserve(items.size());
  for (const Item& it : items) out.emplace_back(it.c, it.change);
  return out;
}

/// The crate's Recompositions state machine over the decomposed stream; a composition's change
/// is the sum of both changes minus one.
CharChanges recomposeAll(const CharChanges& decomposed) {
  CharChanges out;
  out.reserve(decomposed.size());
  std::optional<std::pair<char32_t, int64_t>> composee;
  int lastCcc = -1;  // class of the last character held back; -1: none
  CharChanges buffer;
  for (const auto& [ch, change] : decomposed) {
    const uint8_t cls = combiningClass(ch);
    if (!composee) {
      if (cls != 0) {
        out.emplace_back(ch, change);
        continue;
      }
      composee = std::make_pair(ch, change);
      continue;
    }
    const auto k = *composee;
    if (lastCcc < 0) {
      if (const auto r = compose(k.first, ch)) {
        composee = std::make_pair(*r, k.second + change - 1);
        continue;
      }
      if (cls == 0) {
        composee = std::make_pair(ch, change);
        out.push_back(k);
        continue;
      }
      buffer.emplace_back(ch, change);
      lastCcc = cls;
      continue;
    }
    if (lastCcc >= cls) {  // blocked from the composee
      if (cls == 0) {
        composee = std::make_pair(ch, change);
        lastCcc = -1;
        out.push_back(k);
        out.insert(out.end(), buffer.begin(), buffer.end());
        buffer.clear();
        continue;
      }
      buffer.emplace_back(ch, change);
      lastCcc = cls;
      continue;
    }
    if (const auto r = compose(k.first, ch)) {
      composee = std::make_pair(*r, k.second + change - 1);
      continue;
    }
    buffer.emplace_back(ch, change);
    lastCcc = cls;
  }
  if (composee) out.push_back(*composee);
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

enum class Form { NFD, NFKD, NFC, NFKC };

void unicodeNormalize(NormalizedString& s, Form form) {
  if (isAscii(s.normalized())) return;  // ASCII is inert in every form
  const bool compat = form == Form::NFKD || form == Form::NFKC;
  CharChanges changes = decomposeAll(charsOf(s.normalized()), compat);
  if (form == Form::NFC || form == Form::NFKC) changes = recomposeAll(changes);
  hfTransform(s, changes, 0);
}

// ---- The normalizers --------------------------------------------------------------------------

std::string stringField(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string())
    componentError(kNormalizer, std::string("\"") + key + "\" must be a string");
  return j[key].get<std::string>();
}

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const nlohmann::json& j)
      : m_cleanText(boolField(j, "clean_text", true, kNormalizer)),
        m_chinese(boolField(j, "handle_chinese_chars", true, kNormalizer)),
        m_lowercase(boolField(j, "lowercase", true, kNormalizer)),
        m_stripAccents(boolField(j, "strip_accents", m_lowercase, kNormalizer)) {}

  void normalize(NormalizedString& s) const override {
    if (m_cleanText) {
      filterChars(s, [](char32_t c) { return !(c == 0 || c == 0xFFFD || isBertControl(c)); });
      mapChars(s, [](char32_t c) { return isBertWhitespace(c) ? U' ' : c; });
    }
    if (m_chinese) {
      CharChanges changes;
      changes.reserve(s.size());
      for (char32_t c : charsOf(s.normalized())) {
        if (isChineseChar(c)) {
          changes.emplace_back(U' ', 0);
          changes.emplace_back(c, 1);
          changes.emplace_back(U' ', 1);
        } else {
          changes.emplace_back(c, 0);
        }
      }
      hfTransform(s, changes, 0);
    }
    if (m_stripAccents) {
      unicodeNormalize(s, Form::NFD);
      filterChars(s, [](char32_t c) { return !isMarkNonspacing(c); });
    }
    if (m_lowercase) lowercase(s);
  }

 private:
  bool m_cleanText, m_chinese, m_lowercase, m_stripAccents;
};

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(Form form) : m_form(form) {}
  void normalize(NormalizedString& s) const override { unicodeNormalize(s, m_form); }

 private:
  Form m_form;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { lowercase(s); }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : m_left(left), m_right(right) {}
  void normalize(NormalizedString& s) const override { stripEnds(s, m_left, m_right); }

 private:
  bool m_left, m_right;
};

class StripAccentsNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override {
    filterChars(s, [](char32_t c) { return !isCombiningMark(c); });
  }
};

/// SentencePiece's nmt_nfkc clean-up without the NFKC (HF's Nmt).
class NmtNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override {
    filterChars(s, [](char32_t c) {
      return !((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F ||
               c == 0x8F || c == 0x9F);
    });
    mapChars(s, [](char32_t c) -> char32_t {
      switch (c) {
        case 0x9:
        case 0xA:
        case 0xC:
        case 0xD:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x2581:
        case 0xFEFF:
        case 0xFFFD:
          return U' ';
        default:
          return c >= 0x200B && c <= 0x200F ? U' ' : c;
      }
    });
  }
};

class ReplaceNormalizer final : public Normalizer {
 public:
  explicit ReplaceNormalizer(const nlohmann::json& j) : m_content(stringField(j, "content")) {
    if (!j.contains("pattern") || !j["pattern"].is_object()) {
      componentError(kNormalizer,
                     "Replace needs \"pattern\": {\"String\": ...} or {\"Regex\": ...}");
    }
    const nlohmann::json& p = j["pattern"];
    if (p.contains("String") && p["String"].is_string()) {
      m_literal = p["String"].get<std::string>();
    } else if (p.contains("Regex") && p["Regex"].is_string()) {
      m_regex = std::make_unique<Regex>(p["Regex"].get<std::string>());
    } else {
      componentError(kNormalizer,
                     "Replace needs \"pattern\": {\"String\": ...} or {\"Regex\": ...}");
    }
  }

  void normalize(NormalizedString& s) const override {
    const std::string& text = s.normalized();
    const auto ranges = m_regex ? m_regex->findAll(text) : detail::literalMatches(text, m_literal);
    if (ranges.empty()) return;
    // Bounded before anything is built: "a" -> 100 kB over 100k "a" would be 10 GB of text (and
    // its alignments), which no tokenizer means.
    uint64_t replaced = 0;
    for (const auto& [b, e] : ranges) replaced += e - b;
    const uint64_t grown = text.size() - replaced + uint64_t(ranges.size()) * m_content.size();
    const uint64_t limit = 16 * uint64_t(text.size()) + (1u << 20);
    if (grown > limit)
      throw Error(ErrorKind::ResourceLimit, "normalizer: Replace would make the text " +
                                                std::to_string(grown) + " bytes long, more than " +
                                                std::to_string(limit) +
                                                " (16 times the text and 1 MiB)");
    detail::hfReplace(s, detail::matchListFromRanges(text.size(), ranges), m_content);
  }

 private:
  std::string m_content;
  std::string m_literal;
  std::unique_ptr<Regex> m_regex;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string text) : m_text(std::move(text)) {}
  void normalize(NormalizedString& s) const override {
    if (!s.empty()) s.prepend(m_text);  // every prepended byte takes the first character's span
  }

 private:
  std::string m_text;
};

class ByteLevelNormalizer final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override { detail::byteLevelMap(s); }
};

// ---- Precompiled: SentencePiece's compiled normalization rules (spm_precompiled) ---------------

std::vector<unsigned char> decodeBase64(const std::string& s) {
  auto value = [](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> out;
  out.reserve(s.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  std::size_t i = 0;
  for (; i < s.size() && s[i] != '='; ++i) {
    const int v = value(s[i]);
    if (v < 0) componentError(kNormalizer, "precompiled_charsmap is not base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  for (; i < s.size(); ++i) {
    if (s[i] != '=') componentError(kNormalizer, "precompiled_charsmap is not base64");
  }
  return out;
}

bool validUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80           ? 1
                    : (b >> 5) == 0x6  ? 2
                    : (b >> 4) == 0xE  ? 3
                    : (b >> 3) == 0x1E ? 4
                                       : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    std::size_t len = 0;
    const char32_t c = decodeAt(s, i, &len);
    if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) ||
        (n == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) {
      return false;
    }
    i += n;
  }
  return true;
}

/// Extended grapheme clusters of UTF-8 text (unicode-segmentation's graphemes(true)), as byte
/// boundaries including 0 and the end.
std::vector<std::size_t> graphemeBoundaries(const std::string& text) {
  struct BreakCloser {
    void operator()(UBreakIterator* b) const { ubrk_close(b); }
  };
  thread_local std::unique_ptr<UBreakIterator, BreakCloser> iterator;
  UErrorCode st = U_ZERO_ERROR;
  if (!iterator) {
    iterator.reset(ubrk_open(UBRK_CHARACTER, "", nullptr, 0, &st));
    if (U_FAILURE(st))
      componentError(kNormalizer,
                     std::string("ICU break iterator unavailable: ") + u_errorName(st));
  }
  UText* ut = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &st);
  ubrk_setUText(iterator.get(), ut, &st);
  std::vector<std::size_t> out;
  if (U_SUCCESS(st)) {
    for (int32_t p = ubrk_first(iterator.get()); p != UBRK_DONE; p = ubrk_next(iterator.get())) {
      out.push_back(static_cast<std::size_t>(p));
    }
  }
  utext_close(ut);
  if (out.empty() || out.front() != 0) out.insert(out.begin(), 0);
  if (out.back() != text.size()) out.push_back(text.size());
  return out;
}

class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(const nlohmann::json& j) {
    if (!j.contains("precompiled_charsmap") || !j["precompiled_charsmap"].is_string()) {
      componentError(kNormalizer, "Precompiled needs \"precompiled_charsmap\" (a base64 string)");
    }
    const std::vector<unsigned char> blob =
        decodeBase64(j["precompiled_charsmap"].get<std::string>());
    if (blob.size() < 4) componentError(kNormalizer, "precompiled_charsmap is too short");
    const uint32_t trieBytes =
        static_cast<uint32_t>(blob[0]) | static_cast<uint32_t>(blob[1]) << 8 |
        static_cast<uint32_t>(blob[2]) << 16 | static_cast<uint32_t>(blob[3]) << 24;
    const std::size_t units = trieBytes / 4;
    if (4 + units * 4 > blob.size())
      componentError(kNormalizer, "precompiled_charsmap: the trie is cut short");
    m_trie.resize(units);
    for (std::size_t u = 0; u < units; ++u) {
      const unsigned char* p = blob.data() + 4 + u * 4;
      m_trie[u] = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                  static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    }
    m_normalized.assign(reinterpret_cast<const char*>(blob.data()) + 4 + units * 4,
                        blob.size() - 4 - units * 4);
    if (!validUtf8(m_normalized))
      componentError(kNormalizer, "precompiled_charsmap: the normalized strings are not UTF-8");
  }

  void normalize(NormalizedString& s) const override {
    const std::string& text = s.normalized();
    if (text.empty()) return;
    CharChanges changes;
    changes.reserve(text.size());
    bool modified = false;
    const std::vector<std::size_t> bounds = graphemeBoundaries(text);
    for (std::size_t g = 0; g + 1 < bounds.size(); ++g) {
      const std::string grapheme = text.substr(bounds[g], bounds[g + 1] - bounds[g]);
      if (grapheme.size() < 6) {
        if (const auto norm = transform(grapheme)) {
          modified = true;
          replace(changes, grapheme, *norm);
          continue;
        }
      }
      for (std::size_t i = 0; i < grapheme.size();) {
        std::size_t len = 0;
        const char32_t c = decodeAt(grapheme, i, &len);
        const std::string part = grapheme.substr(i, len);
        if (const auto norm = transform(part)) {
          modified = true;
          replace(changes, part, *norm);
        } else {
          changes.emplace_back(c, 0);
        }
        i += len;
      }
    }
    if (modified) hfTransform(s, changes, 0);
  }

 private:
  static bool hasLeaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
  static uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
  static uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
  static uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

  /// The first (shortest) key of the double-array trie that is a prefix of chunk: its value.
  std::optional<uint32_t> firstPrefixValue(const std::string& chunk) const {
    if (m_trie.empty()) return std::nullopt;
    std::size_t node = 0;
    uint32_t unit = m_trie[node];
    node ^= offset(unit);
    for (char ch : chunk) {
      const unsigned char c = static_cast<unsigned char>(ch);
      if (c == 0) break;
      node ^= c;
      if (node >= m_trie.size()) return std::nullopt;
      unit = m_trie[node];
      if (label(unit) != c) return std::nullopt;
      node ^= offset(unit);
      if (hasLeaf(unit)) {
        if (node >= m_trie.size()) return std::nullopt;
        return value(m_trie[node]);
      }
    }
    return std::nullopt;
  }

  /// spm_precompiled's transform: the whole chunk is replaced by the string of its first match.
  std::optional<std::string> transform(const std::string& chunk) const {
    const auto index = firstPrefixValue(chunk);
    if (!index || *index > m_normalized.size()) return std::nullopt;
    const std::size_t end = m_normalized.find('\0', *index);
    return m_normalized.substr(*index,
                               (end == std::string::npos ? m_normalized.size() : end) - *index);
  }

  /// HF's precompiled replace(): new characters first marked 0; when the text grows, the last
  /// `diff` changes of the whole list become +1; when it shrinks, the last change absorbs it.
  static void replace(CharChanges& changes, const std::string& oldPart,
                      const std::string& newPart) {
    const std::vector<char32_t> newChars = charsOf(newPart);
    const int64_t diff =
        static_cast<int64_t>(newChars.size()) - static_cast<int64_t>(charsOf(oldPart).size());
    for (char32_t c : newChars) changes.emplace_back(c, 0);
    if (diff > 0) {
      for (std::size_t k = 0; k < static_cast<std::size_t>(diff) && k < changes.size(); ++k) {
        changes[changes.size() - 1 - k].second = 1;
      }
    } else if (diff < 0 && !changes.empty()) {
      changes.back().second += diff;
    }
  }

  std::vector<uint32_t> m_trie;
  std::string m_normalized;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : m_parts(std::move(parts)) {}
  void normalize(NormalizedString& s) const override {
    for (const auto& p : m_parts) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> m_parts;
};

}  // namespace

std::unique_ptr<Normalizer> makeNormalizer(const nlohmann::json& json) {
  const std::string type = componentType(json, kNormalizer);
  if (type == "BertNormalizer") return std::make_unique<BertNormalizer>(json);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(Form::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(Form::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(Form::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(Form::NFKD);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(boolField(json, "strip_left", true, kNormalizer),
                                             boolField(json, "strip_right", true, kNormalizer));
  }
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Nmt") return std::make_unique<NmtNormalizer>();
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(json);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(stringField(json, "prepend"));
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Precompiled") return std::make_unique<PrecompiledNormalizer>(json);
  if (type == "Sequence") {
    if (!json.contains("normalizers") || !json["normalizers"].is_array()) {
      componentError(kNormalizer, "Sequence needs a \"normalizers\" array");
    }
    const SequenceNesting nesting(kNormalizer);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const nlohmann::json& part : json["normalizers"]) {
      if (!part.is_null()) parts.push_back(makeNormalizer(part));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  componentError(
      kNormalizer,
      "type \"" + type +
          "\" is not supported; supported: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, "
          "Strip, StripAccents, Nmt, Replace, Prepend, ByteLevel, Precompiled, Sequence");
}

}  // namespace attnscope::hf
