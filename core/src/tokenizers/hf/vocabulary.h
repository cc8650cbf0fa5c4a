// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope::hf {

/// A token -> id table and its inverse, as BPE, WordPiece and WordLevel models hold them.
/// Repeated tokens keep their last id (as serde fills a map); an id given to several tokens reads
/// back as the first of them in the file's order. Not copyable: the map's keys view the strings.
class Vocabulary final {
 public:
  using Entries = std::vector<std::pair<std::string, uint32_t>>;

  Vocabulary() = default;
  /// Throws Error(Format) for an id far beyond the number of tokens (a hostile file must not
  /// make us allocate gigabytes).
  explicit Vocabulary(Entries entries);
  Vocabulary(Vocabulary&&) = default;
  Vocabulary& operator=(Vocabulary&&) = default;
  Vocabulary(const Vocabulary&) = delete;
  Vocabulary& operator=(const Vocabulary&) = delete;

  /// tokenizer.json's "vocab" object of the model; throws Error(Format) naming a bad entry.
  static Entries parseJson(const nlohmann::json& model);

  const uint32_t* find(std::string_view token) const {
    const auto it = m_ids.find(token);
    return it == m_ids.end() ? nullptr : &it->second;
  }
  std::optional<int64_t> tokenToId(std::string_view token) const {
    const uint32_t* id = find(token);
    return id ? std::optional<int64_t>(*id) : std::nullopt;
  }
  /// "" for an id outside the table or a hole in it.
  std::string idToToken(int64_t id) const {
    return id < 0 || static_cast<uint64_t>(id) >= m_tokens.size()
               ? std::string()
               : m_tokens[static_cast<std::size_t>(id)];
  }
  const std::string& token(uint32_t id) const { return m_tokens[id]; }
  /// One more than the largest id.
  std::size_t size() const { return m_tokens.size(); }
  /// Bytes of the longest entry.
  std::size_t maxTokenBytes() const { return m_maxTokenBytes; }

 private:
  std::deque<std::string> m_strings;  // owns the keys of m_ids (a deque never moves them)
  std::unordered_map<std::string_view, uint32_t> m_ids;
  std::vector<std::string> m_tokens;  // id -> token; "" for holes
  std::size_t m_maxTokenBytes = 0;
};

}  // namespace attnscope::hf
