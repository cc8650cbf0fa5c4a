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

/// Hugging Face's WordLevel model: the whole piece is one vocabulary entry, or the unk token.
class WordLevelModel : public Model {
 public:
  WordLevelModel(std::vector<std::pair<std::string, uint32_t>> vocab, std::string unkToken);
  /// From the "model" object of a tokenizer.json; unk_token defaults to "<unk>".
  static std::unique_ptr<WordLevelModel> fromJson(const nlohmann::json& json);

  /// Throws Error(InvalidArgument) for a piece outside the vocabulary when the unk token is
  /// not in it either.
  std::vector<ModelToken> tokenize(std::string_view piece) const override;
  std::optional<int64_t> tokenToId(std::string_view token) const override;
  std::string idToToken(int64_t id) const override;
  std::size_t vocabSize() const override { return m_vocab.size(); }

 private:
  Vocabulary m_vocab;
  std::string m_unkToken;
};

}  // namespace attnscope::hf
