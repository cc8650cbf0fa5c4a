// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/encoder_family.h"

#include "attnscope/error.h"
#include "nn/state_dict.h"

namespace attnscope {

EncoderFamily::EncoderFamily(const std::string& folder) : FolderFamily(folder) {}

std::vector<Token> EncoderFamily::tokenizePair(const std::string& text,
                                               const std::string& pair) const {
  return m_tokenizer.encodePair(text, pair);
}

std::optional<int64_t> EncoderFamily::maskTokenId() const {
  const auto mask = m_tokenizer.maskToken();
  return mask ? std::optional<int64_t>(mask->second) : std::nullopt;
}

std::vector<std::string> EncoderFamily::notices() const {
  if (m_ignored.empty()) return {};
  std::string list;
  for (std::size_t i = 0; i < m_ignored.size() && i < 4; ++i)
    list += (i ? ", " : "") + m_ignored[i];
  if (m_ignored.size() > 4) list += ", …";
  return {"the checkpoint's " + std::to_string(m_ignored.size()) +
          " tensor(s) of a task head are not used for attention and were ignored: " + list};
}

Embedded EncoderFamily::embed(const BatchInput& batch, const RunRequest&,
                              const torch::Device& device) {
  const int64_t B = static_cast<int64_t>(batch.tokens.size()), T = batch.maxQuery;
  torch::Tensor ids = torch::zeros({B, T}, torch::kLong),
                types = torch::zeros({B, T}, torch::kLong);
  auto idAt = ids.accessor<int64_t, 2>();
  auto typeAt = types.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<Token>& tokens = batch.tokens[static_cast<std::size_t>(b)];
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      idAt[b][static_cast<int64_t>(t)] = tokens[t].id;
      typeAt[b][static_cast<int64_t>(t)] = tokens[t].segment;
    }
  }
  return {embedTokens(ids.to(device), types.to(device)), {}};
}

ModelInfo EncoderFamily::encoderInfo(const std::string& kind, int layers, int heads, int width,
                                     int positions) const {
  ModelInfo i = folderInfo(kind, "encoder", layers, heads, heads, width, positions, false);
  i.supportsPair = m_tokenizer.supportsPair();
  if (const auto mask = m_tokenizer.maskToken()) i.maskToken = mask->first;
  return i;
}

void EncoderFamily::load(torch::nn::Module& module, WeightRules rules, const std::string& summary) {
  rules.ignoreUnexpected = true;
  // Buffers some checkpoints carry, which are not weights.
  rules.ignoredSuffixes.push_back("position_ids");
  rules.ignoredSuffixes.push_back("token_type_ids");
  m_ignored = loadFrozen(module, rules, summary);
}

}  // namespace attnscope
