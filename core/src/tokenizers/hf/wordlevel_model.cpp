// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/wordlevel_model.h"

#include <algorithm>

#include "attnscope/error.h"

namespace attnscope::hf {

WordLevelModel::WordLevelModel(std::vector<std::pair<std::string, uint32_t>> vocab,
                               std::string unkToken)
    : m_unkToken(std::move(unkToken)) {
  m_vocab = Vocabulary(std::move(vocab));
}

std::unique_ptr<WordLevelModel> WordLevelModel::fromJson(const nlohmann::json& json) {
  if (!json.is_object()) componentError("model", "a WordLevel model must be an object");
  Vocabulary::Entries vocab = Vocabulary::parseJson(json);
  std::string unk = "<unk>";
  auto uit = json.find("unk_token");
  if (uit != json.end()) {
    if (!uit->is_string()) componentError("model", "unk_token must be a string");
    unk = uit->get<std::string>();
  }
  return std::make_unique<WordLevelModel>(std::move(vocab), std::move(unk));
}

std::optional<int64_t> WordLevelModel::tokenToId(std::string_view token) const {
  return m_vocab.tokenToId(token);
}

std::string WordLevelModel::idToToken(int64_t id) const { return m_vocab.idToToken(id); }

std::vector<ModelToken> WordLevelModel::tokenize(std::string_view piece) const {
  if (const uint32_t* id = m_vocab.find(piece))
    return {ModelToken{*id, std::string(piece), 0, piece.size()}};
  const uint32_t* unk = m_vocab.find(m_unkToken);
  if (!unk) {
    throw Error(ErrorKind::InvalidArgument, "model: \"" + std::string(piece) +
                                                "\" is not in the vocabulary and unk_token \"" +
                                                m_unkToken + "\" is not in it either");
  }
  return {ModelToken{*unk, m_unkToken, 0, piece.size()}};
}

}  // namespace attnscope::hf
