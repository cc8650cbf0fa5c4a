// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizers/hf/components.h"

namespace attnscope::hf {

/// One entry of tokenizer.json's "added_tokens".
struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

/// The added and special tokens of a tokenizer, found in the text before the model sees it:
/// tokens with normalized = false are matched in the original text, the others in each normalized
/// piece (Hugging Face's AddedVocabulary::extract_and_normalize). Matching is leftmost-longest;
/// single_word, lstrip and rstrip behave as there.
class AddedVocabulary final {
 public:
  AddedVocabulary() = default;
  /// tokens: the "added_tokens" array. normalizer (may be null) gives the normalized form of the
  /// normalized tokens' contents.
  AddedVocabulary(const nlohmann::json& tokens, const Normalizer* normalizer);

  /// The input split around added tokens and normalized (the pieces that are not tokens).
  std::vector<Split> extractAndNormalize(const std::string& text,
                                         const Normalizer* normalizer) const;

  const AddedToken* find(int64_t id) const;
  const AddedToken* find(const std::string& content) const;
  const std::vector<AddedToken>& tokens() const { return m_tokens; }

 private:
  struct Matcher {
    // Tokens by their first byte, longest first, so the first that matches is the longest.
    std::unordered_map<unsigned char, std::vector<std::pair<std::string, std::size_t>>> byFirstByte;
    bool empty() const { return byFirstByte.empty(); }
  };
  void splitInto(const NormalizedString& s, const Matcher& matcher, std::vector<Split>& out) const;

  std::vector<AddedToken> m_tokens;
  Matcher m_original;    // normalized == false: matched before normalization
  Matcher m_normalized;  // normalized == true: matched in the normalized pieces
};

}  // namespace attnscope::hf
