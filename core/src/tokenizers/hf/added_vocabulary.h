// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
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
  /// The patterns as an Aho–Corasick automaton over their REVERSED bytes: running it over the
  /// text from its end gives, at each position, the longest pattern starting there in O(1), so
  /// the whole text costs O(its length) whatever the patterns. A forward trie walked from every
  /// position cost the longest pattern's length at each one (a 100 kB token on 120k characters:
  /// minutes); comparing every pattern at each position took 26 s for 3,000 added tokens.
  struct Matcher {
    static constexpr uint32_t kNone = 0;  // the root: no pattern
    // (node << 8 | byte) -> child node; node 0 is the root.
    std::unordered_map<uint64_t, uint32_t> edges;
    std::vector<uint32_t> fail;    // node -> its longest proper suffix that is a node
    std::vector<uint32_t> length;  // node -> its depth, the length of its pattern
    // node -> the longest pattern among it and its suffixes that has a token without single_word
    // (plainOut), or that has a single_word token (wordOut); kNone when there is none.
    std::vector<uint32_t> plainOut, wordOut;
    // node -> the tokens whose pattern it is, in file order.
    std::unordered_map<uint32_t, std::vector<std::size_t>> ends;
    void add(const std::string& pattern, std::size_t token);
    /// Failure links and outputs, once every pattern is added.
    void finish(const std::vector<AddedToken>& tokens);
    uint32_t step(uint32_t node, unsigned char byte) const;
    bool empty() const { return ends.empty(); }
  };
  void splitInto(const NormalizedString& s, const Matcher& matcher, std::vector<Split>& out) const;

  std::vector<AddedToken> m_tokens;
  Matcher m_original;    // normalized == false: matched before normalization
  Matcher m_normalized;  // normalized == true: matched in the normalized pieces
};

}  // namespace attnscope::hf
