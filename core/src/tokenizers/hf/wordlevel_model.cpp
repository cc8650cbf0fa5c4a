// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/wordlevel_model.h"

#include <algorithm>

#include "attnscope/error.h"

namespace attnscope::hf {

WordLevelModel::WordLevelModel(std::vector<std::pair<std::string, uint32_t>> vocab,
                               std::string unkToken)
    : m_unkToken(std::move(unkToken)) {
  uint64_t maxId = 0;
  for (const auto& [token, id] : vocab) maxId = std::max<uint64_t>(maxId, uint64_t{id} + 1);
  if (maxId > vocab.size() + (uint64_t{1} << 20)) {
    componentError("model", "vocab: id " + std::to_string(maxId - 1) +
                                " is far beyond the vocabulary's " + std::to_string(vocab.size()) +
                                " tokens");
  }
  m_idToToken.resize(static_cast<std::size_t>(maxId));
  std::vector<bool> hasId(static_cast<std::size_t>(maxId), false);
  m_vocab.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    auto it = m_vocab.find(token);
    if (it != m_vocab.end()) {
      it->second = id;  // a repeated key: the last one wins
    } else {
      m_strings.push_back(std::move(token));
      m_vocab.emplace(std::string_view(m_strings.back()), id);
    }
  }
  for (const std::string& token : m_strings) {
    const uint32_t id = m_vocab.find(token)->second;
    if (!hasId[id]) {
      m_idToToken[id] = token;
      hasId[id] = true;
    }
  }
}

std::unique_ptr<WordLevelModel> WordLevelModel::fromJson(const nlohmann::json& json) {
  if (!json.is_object()) componentError("model", "a WordLevel model must be an object");
  auto vit = json.find("vocab");
  if (vit == json.end()) componentError("model", "vocab is missing");
  if (!vit->is_object()) componentError("model", "vocab must be an object of token -> id");
  std::vector<std::pair<std::string, uint32_t>> vocab;
  vocab.reserve(vit->size());
  for (auto it = vit->begin(); it != vit->end(); ++it) {
    const nlohmann::json& v = it.value();
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<uint64_t>() > 0xFFFFFFFFull) {
      componentError(
          "model", "vocab: the id of \"" + it.key() + "\" must be an integer from 0 to 4294967295");
    }
    vocab.emplace_back(it.key(), static_cast<uint32_t>(v.get<uint64_t>()));
  }
  std::string unk = "<unk>";
  auto uit = json.find("unk_token");
  if (uit != json.end()) {
    if (!uit->is_string()) componentError("model", "unk_token must be a string");
    unk = uit->get<std::string>();
  }
  return std::make_unique<WordLevelModel>(std::move(vocab), std::move(unk));
}

std::optional<int64_t> WordLevelModel::tokenToId(std::string_view token) const {
  auto it = m_vocab.find(token);
  if (it == m_vocab.end()) return std::nullopt;
  return int64_t{it->second};
}

std::string WordLevelModel::idToToken(int64_t id) const {
  if (id < 0 || static_cast<uint64_t>(id) >= m_idToToken.size()) return {};
  return m_idToToken[static_cast<std::size_t>(id)];
}

std::vector<ModelToken> WordLevelModel::tokenize(std::string_view piece) const {
  auto it = m_vocab.find(piece);
  if (it != m_vocab.end()) return {ModelToken{it->second, std::string(piece), 0, piece.size()}};
  auto unk = m_vocab.find(m_unkToken);
  if (unk == m_vocab.end()) {
    throw Error(ErrorKind::InvalidArgument, "model: \"" + std::string(piece) +
                                                "\" is not in the vocabulary and unk_token \"" +
                                                m_unkToken + "\" is not in it either");
  }
  return {ModelToken{unk->second, m_unkToken, 0, piece.size()}};
}

}  // namespace attnscope::hf
