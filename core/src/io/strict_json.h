// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace attnscope {

/// What parseJsonChecked found. A value is set only when problem is None.
struct CheckedJson {
  enum class Problem { None, Invalid, DuplicateKey, TooDeep };
  nlohmann::json value;
  Problem problem = Problem::None;
  std::string detail;                     // the parser's message, or the duplicated key
  std::vector<std::string> topLevelKeys;  // the root object's keys in file order, when asked
};

/// Parses JSON in one linear pass and refuses what nlohmann would accept silently: a key given
/// twice in one object (nlohmann keeps the last) and nesting deeper than maxDepth. A SAX handler
/// rather than nlohmann's parser callback, whose DOM builder rescans the parent object after
/// every child object (160,000 safetensors entries took 31 s). With allowDuplicateKeys a repeated
/// key keeps its last value, as nlohmann and serde_json's maps do (a tokenizer.json vocabulary).
CheckedJson parseJsonChecked(std::string_view text, std::size_t maxDepth,
                             bool keepTopLevelOrder = false, bool allowDuplicateKeys = false);

/// parseJsonChecked with the errors worded for a person: throws Error(Format)
/// "<source>: duplicate key \"n_layer\"" or "<source>: not valid JSON (...)". With
/// invalidIsDiscarded, malformed JSON returns a discarded value instead (for callers that word
/// that error themselves), while duplicates and depth still throw. allowDuplicateKeys: as for
/// parseJsonChecked.
nlohmann::json parseStrictJson(std::string_view text, const std::string& source,
                               std::size_t maxDepth = 64, bool invalidIsDiscarded = false,
                               bool allowDuplicateKeys = false);

}  // namespace attnscope
