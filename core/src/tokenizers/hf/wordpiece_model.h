// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizers/hf/components.h"
#include "tokenizers/hf/vocabulary.h"

namespace attnscope::hf {

/// Hugging Face's WordPiece model: greedy longest-match-first, continuations carry the prefix
/// ("##"); a word longer than max_input_chars_per_word characters, or with a part no entry
/// matches, becomes one unk token over the whole piece.
class WordPieceModel : public Model {
 public:
  WordPieceModel(std::vector<std::pair<std::string, uint32_t>> vocab, std::string unkToken,
                 std::string continuingSubwordPrefix, std::size_t maxInputCharsPerWord);
  /// From the "model" object of a tokenizer.json; absent fields take HF's defaults
  /// ("[UNK]", "##", 100).
  static std::unique_ptr<WordPieceModel> fromJson(const nlohmann::json& json);

  std::vector<ModelToken> tokenize(std::string_view piece) const override;
  std::optional<int64_t> tokenToId(std::string_view token) const override;
  std::string idToToken(int64_t id) const override;
  std::size_t vocabSize() const override { return m_vocab.size(); }

 private:
  std::vector<ModelToken> unk(std::string_view piece) const;

  Vocabulary m_vocab;
  std::string m_unkToken;
  std::string m_prefix;
  std::size_t m_maxChars;
};

}  // namespace attnscope::hf
