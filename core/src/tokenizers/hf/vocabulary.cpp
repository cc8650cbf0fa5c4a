// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/vocabulary.h"

#include <algorithm>

#include "tokenizers/hf/components.h"

namespace attnscope::hf {

Vocabulary::Vocabulary(Entries entries) {
  uint64_t maxId = 0;
  for (const auto& [token, id] : entries) maxId = std::max<uint64_t>(maxId, uint64_t{id} + 1);
  if (maxId > entries.size() + (uint64_t{1} << 20)) {
    componentError("model", "vocab: id " + std::to_string(maxId - 1) +
                                " is far beyond the vocabulary's " +
                                std::to_string(entries.size()) + " tokens");
  }
  m_tokens.resize(static_cast<std::size_t>(maxId));
  std::vector<bool> hasId(static_cast<std::size_t>(maxId), false);
  m_ids.reserve(entries.size());
  for (auto& [token, id] : entries) {
    const auto it = m_ids.find(token);
    if (it != m_ids.end()) {
      it->second = id;
    } else {
      m_maxTokenBytes = std::max(m_maxTokenBytes, token.size());
      m_strings.push_back(std::move(token));
      m_ids.emplace(std::string_view(m_strings.back()), id);
    }
  }
  for (const std::string& token : m_strings) {
    const uint32_t id = m_ids.find(token)->second;
    if (!hasId[id]) {
      m_tokens[id] = token;
      hasId[id] = true;
    }
  }
}

Vocabulary::Entries Vocabulary::parseJson(const nlohmann::json& model) {
  const auto vit = model.find("vocab");
  if (vit == model.end()) componentError("model", "vocab is missing");
  if (!vit->is_object()) componentError("model", "vocab must be an object of token -> id");
  Entries vocab;
  vocab.reserve(vit->size());
  for (auto it = vit->begin(); it != vit->end(); ++it) {
    const nlohmann::json& v = it.value();
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<uint64_t>() > 0xFFFFFFFFull) {
      componentError(
          "model", "vocab: the id of \"" + it.key() + "\" must be an integer from 0 to 4294967295");
    }
    vocab.emplace_back(it.key(), static_cast<uint32_t>(v.get<uint64_t>()));
  }
  return vocab;
}

}  // namespace attnscope::hf
