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
  m_original.finish(m_tokens);
  m_normalized.finish(m_tokens);
}

void AddedVocabulary::Matcher::add(const std::string& pattern, std::size_t token) {
  if (length.empty()) length.push_back(0);  // the root
  uint32_t node = 0;
  for (auto c = pattern.rbegin(); c != pattern.rend(); ++c) {
    const uint64_t key = (uint64_t{node} << 8) | static_cast<unsigned char>(*c);
    const auto [it, added] = edges.emplace(key, static_cast<uint32_t>(length.size()));
    if (added) length.push_back(length[node] + 1);
    node = it->second;
  }
  ends[node].push_back(token);
}

uint32_t AddedVocabulary::Matcher::step(uint32_t node, unsigned char byte) const {
  while (true) {
    if (const auto e = edges.find((uint64_t{node} << 8) | byte); e != edges.end()) return e->second;
    if (node == 0) return 0;
    node = fail[node];
  }
}

void AddedVocabulary::Matcher::finish(const std::vector<AddedToken>& tokens) {
  const std::size_t n = length.size();
  if (n == 0) return;  // no pattern
  std::vector<std::vector<std::pair<unsigned char, uint32_t>>> children(n);
  for (const auto& [key, child] : edges)
    children[key >> 8].emplace_back(static_cast<unsigned char>(key & 0xFF), child);
  fail.assign(n, 0);
  plainOut.assign(n, kNone);
  wordOut.assign(n, kNone);
  // Breadth first: a node's failure link and outputs are shorter, so already known.
  std::vector<uint32_t> queue{0};
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const uint32_t node = queue[q];
    if (node != 0) {
      bool plain = false, word = false;
      if (const auto e = ends.find(node); e != ends.end()) {
        for (const std::size_t index : e->second) (tokens[index].singleWord ? word : plain) = true;
      }
      plainOut[node] = plain ? node : plainOut[fail[node]];
      wordOut[node] = word ? node : wordOut[fail[node]];
    }
    for (const auto& [byte, child] : children[node]) {
      fail[child] = node == 0 ? 0 : step(fail[node], byte);
      queue.push_back(child);
    }
  }
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
  // The automaton's node after reading text[i..] backwards: its outputs are the patterns that
  // start at i, the longest first (4 bytes per byte of text, one pass).
  std::vector<uint32_t> state(matcher.empty() ? 0 : text.size());
  uint32_t node = 0;
  for (std::size_t i = state.size(); i-- > 0;) {
    node = matcher.step(node, static_cast<unsigned char>(text[i]));
    state[i] = node;
  }
  const auto stopOk = [&](std::size_t stop) {
    return stop == text.size() || !isWordChar(charAt(text, stop));
  };
  while (!matcher.empty() && at < text.size()) {
    // Hugging Face's matches: leftmost-longest over every pattern (its Aho-Corasick), the longest
    // pattern starting here whatever its tokens; a single_word token without a word boundary on
    // both sides discards the match, and the search goes on after it (no shorter pattern is tried
    // at the same start: single_word "ab" and "a" on "abc" leave "abc" as it is). Among equal
    // patterns the first in the file.
    uint32_t best = matcher.plainOut[state[at]];
    const uint32_t word = matcher.wordOut[state[at]];
    if (word != Matcher::kNone &&
        (best == Matcher::kNone || matcher.length[word] > matcher.length[best]))
      best = word;
    if (best == Matcher::kNone) {
      at += utf8Length(static_cast<unsigned char>(text[at]));
      continue;
    }
    std::size_t stop = at + matcher.length[best];
    const AddedToken* hit = &m_tokens[matcher.ends.at(best).front()];
    if (hit->singleWord && !((at == 0 || !isWordChar(charBefore(text, at))) && stopOk(stop))) {
      at = stop;
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
