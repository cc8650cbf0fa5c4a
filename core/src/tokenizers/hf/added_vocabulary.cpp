// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/added_vocabulary.h"

#include <algorithm>

#include "tokenizers/hf/unicode_class.h"

namespace attnscope::hf {
namespace {

/// The last character before byte `at` (0 when none).
char32_t charBefore(const std::string& s, std::size_t at) {
  if (at == 0) return 0;
  std::size_t b = at - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  std::size_t len = 0;
  return decodeAt(s, b, &len);
}

char32_t charAt(const std::string& s, std::size_t at) {
  if (at >= s.size()) return 0;
  std::size_t len = 0;
  return decodeAt(s, at, &len);
}

}  // namespace

AddedVocabulary::AddedVocabulary(const nlohmann::json& tokens, const Normalizer* normalizer) {
  if (tokens.is_null()) return;
  if (!tokens.is_array()) componentError("added_tokens", "expected an array");
  for (const nlohmann::json& t : tokens) {
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
        !t.contains("content") || !t["content"].is_string()) {
      componentError("added_tokens",
                     "every entry needs an integer \"id\" and a string \"content\"");
    }
    AddedToken a;
    a.id = t["id"].get<int64_t>();
    a.content = t["content"].get<std::string>();
    if (a.id < 0) componentError("added_tokens", "id of \"" + a.content + "\" is negative");
    a.singleWord = boolField(t, "single_word", false, "added_tokens");
    a.lstrip = boolField(t, "lstrip", false, "added_tokens");
    a.rstrip = boolField(t, "rstrip", false, "added_tokens");
    a.normalized =
        boolField(t, "normalized", !boolField(t, "special", false, "added_tokens"), "added_tokens");
    a.special = boolField(t, "special", false, "added_tokens");
    if (a.content.empty()) continue;
    m_tokens.push_back(a);
  }
  for (std::size_t i = 0; i < m_tokens.size(); ++i) {
    std::string pattern = m_tokens[i].content;
    if (m_tokens[i].normalized && normalizer) {
      NormalizedString n(pattern);
      normalizer->normalize(n);
      pattern = n.normalized();
    }
    if (pattern.empty()) continue;
    Matcher& m = m_tokens[i].normalized ? m_normalized : m_original;
    m.add(pattern, i);
  }
}

void AddedVocabulary::Matcher::add(const std::string& pattern, std::size_t token) {
  uint32_t node = 0;
  for (const char c : pattern) {
    const uint64_t key = (uint64_t{node} << 8) | static_cast<unsigned char>(c);
    const auto [it, added] = edges.emplace(key, nodes);
    if (added) ++nodes;
    node = it->second;
  }
  ends[node].push_back(token);
}

const AddedToken* AddedVocabulary::find(int64_t id) const {
  for (const AddedToken& t : m_tokens) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const AddedToken* AddedVocabulary::find(const std::string& content) const {
  for (const AddedToken& t : m_tokens) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

void AddedVocabulary::splitInto(const NormalizedString& s, const Matcher& matcher,
                                std::vector<Split>& out) const {
  const std::string& text = s.normalized();
  std::size_t done = 0;  // start of the text not yet emitted
  std::size_t at = 0;
  std::vector<std::pair<std::size_t, const std::vector<std::size_t>*>> matches;  // (end, tokens)
  while (!matcher.empty() && at < text.size()) {
    // Every pattern that matches at `at`, shortest first; the longest that may stand here wins,
    // and among equal patterns the first in the file.
    matches.clear();
    uint32_t node = 0;
    for (std::size_t i = at; i < text.size(); ++i) {
      const auto edge =
          matcher.edges.find((uint64_t{node} << 8) | static_cast<unsigned char>(text[i]));
      if (edge == matcher.edges.end()) break;
      node = edge->second;
      if (const auto e = matcher.ends.find(node); e != matcher.ends.end())
        matches.emplace_back(i + 1, &e->second);
    }
    const AddedToken* hit = nullptr;
    std::size_t stop = 0;
    for (auto m = matches.rbegin(); m != matches.rend() && !hit; ++m) {
      for (const std::size_t index : *m->second) {
        const AddedToken& t = m_tokens[index];
        if (t.singleWord) {
          const bool startOk = at == 0 || !isWordChar(charBefore(text, at));
          const bool stopOk = m->first == text.size() || !isWordChar(charAt(text, m->first));
          if (!startOk || !stopOk) continue;
        }
        hit = &t;
        stop = m->first;
        break;
      }
    }
    if (!hit) {
      at += utf8Length(static_cast<unsigned char>(text[at]));
      continue;
    }
    std::size_t start = at;
    if (hit->lstrip) {
      while (start > done && isWhitespace(charBefore(text, start))) {
        std::size_t b = start - 1;
        while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
        start = b;
      }
    }
    if (hit->rstrip) {
      while (stop < text.size() && isWhitespace(charAt(text, stop))) {
        stop += utf8Length(static_cast<unsigned char>(text[stop]));
      }
    }
    if (done < start) out.push_back({s.slice(done, start), -1});
    out.push_back({s.slice(start, stop), hit->id});
    done = at = stop;
  }
  if (done < text.size() || text.empty()) out.push_back({s.slice(done, text.size()), -1});
}

std::vector<Split> AddedVocabulary::extractAndNormalize(const std::string& text,
                                                        const Normalizer* normalizer) const {
  std::vector<Split> first;
  splitInto(NormalizedString(text), m_original, first);
  std::vector<Split> out;
  for (Split& piece : first) {
    if (piece.addedId >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    if (normalizer) normalizer->normalize(piece.text);
    splitInto(piece.text, m_normalized, out);
  }
  return out;
}

}  // namespace attnscope::hf
