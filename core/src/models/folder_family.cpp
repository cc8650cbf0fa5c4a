// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/folder_family.h"

#include <filesystem>
#include <utility>

#include "attnscope/error.h"
#include "models/checkpoint_folder.h"
#include "nn/packed_weights.h"
#include "nn/state_dict.h"
#include "runtime/runtime_init.h"

namespace attnscope {

FolderParts FolderParts::read(const std::string& folder) {
  // Braced: evaluated left to right, so a missing config.json is reported before the rest.
  return FolderParts{
      ConfigReader::fromFile((std::filesystem::path(folder) / "config.json").string()),
      FolderTokenizer::open(folder), openCheckpointFolder(folder), std::string(), nullptr};
}

FolderFamily::FolderFamily(const std::string& folder) : FolderFamily(FolderParts::read(folder)) {}

FolderFamily::FolderFamily(FolderParts parts)
    : m_config(std::move(parts.config)),
      m_tokenizer(std::move(parts.tokenizer)),
      m_checkpoint(std::move(parts.checkpoint)),
      m_fileSummary(std::move(parts.fileSummary)),
      m_packed(std::move(parts.packed)) {
  ensureRuntime();
}

ModelInfo FolderFamily::folderInfo(const std::string& kind, const std::string& variant, int layers,
                                   int heads, int kvHeads, int width, int positions,
                                   bool causal) const {
  ModelInfo i;
  i.kind = kind;
  i.name = kind;
  i.variant = variant;
  i.layers = layers;
  i.heads = heads;
  i.kvHeads = kvHeads;
  i.dModel = width;
  i.maxPositions = positions;
  i.causal = causal;
  i.parameterBytes = parameterBytes(*m_root);
  i.fileSummary = m_fileSummary;
  return i;
}

torch::nn::Module& FolderFamily::rootForVocabulary(int vocabSize) {
  return rootForVocabulary(vocabSize, m_tokenizer.vocabSize(), m_tokenizer.source());
}

torch::nn::Module& FolderFamily::rootForVocabulary(int vocabSize, std::size_t tokens,
                                                   const std::string& tokensSource) {
  // An id past the embedding's rows would index outside it at run time.
  if (tokens > static_cast<std::size_t>(vocabSize)) {
    throw Error(ErrorKind::Format, tokensSource + " has " + std::to_string(tokens) +
                                       " tokens but " + m_config.source() + " says vocab_size " +
                                       std::to_string(vocabSize));
  }
  return *m_root;
}

bool FolderFamily::hasTensor(const std::string& name, const std::string& prefix) const {
  if (m_checkpoint.find(name) || m_checkpoint.find(prefix + name)) return true;
  return m_packed && (m_packed->find(name) || m_packed->find(prefix + name));
}

std::vector<std::string> FolderFamily::loadFrozen(torch::nn::Module& module,
                                                  const WeightRules& rules,
                                                  const std::string& summary) {
  for (auto& p : module.parameters()) p.set_requires_grad(false);
  return loadWeights(module, m_checkpoint, rules, summary, m_packed.get());
}

}  // namespace attnscope
