// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/encoder_family.h"

#include <filesystem>

#include "attnscope/error.h"
#include "models/checkpoint_folder.h"
#include "nn/state_dict.h"
#include "runtime/runtime_init.h"

namespace attnscope {

EncoderFamily::EncoderFamily(const std::string& folder)
    : m_config(ConfigReader::fromFile((std::filesystem::path(folder) / "config.json").string())),
      m_tokenizer(FolderTokenizer::open(folder)),
      m_checkpoint(openCheckpointFolder(folder)) {
  ensureRuntime();
}

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
  ModelInfo i;
  i.kind = kind;
  i.name = kind;
  i.variant = "encoder";
  i.layers = layers;
  i.heads = heads;
  i.kvHeads = heads;
  i.dModel = width;
  i.maxPositions = positions;
  i.causal = false;
  i.supportsPair = m_tokenizer.supportsPair();
  if (const auto mask = m_tokenizer.maskToken()) i.maskToken = mask->first;
  return i;
}

void EncoderFamily::checkVocabulary(int vocabSize) const {
  if (m_tokenizer.vocabSize() > static_cast<std::size_t>(vocabSize)) {
    throw Error(ErrorKind::Format, m_tokenizer.source() + " has " +
                                       std::to_string(m_tokenizer.vocabSize()) + " tokens but " +
                                       m_config.source() + " says vocab_size " +
                                       std::to_string(vocabSize));
  }
}

bool EncoderFamily::hasTensor(const std::string& name, const std::string& prefix) const {
  return m_checkpoint.find(name) || m_checkpoint.find(prefix + name);
}

void EncoderFamily::load(torch::nn::Module& module, WeightRules rules, const std::string& summary) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
  rules.ignoreUnexpected = true;
  // Buffers some checkpoints carry, which are not weights.
  rules.ignoredSuffixes.push_back("position_ids");
  rules.ignoredSuffixes.push_back("token_type_ids");
  m_ignored = loadWeights(module, m_checkpoint, rules, summary);
}

}  // namespace attnscope
