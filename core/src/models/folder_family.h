// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/folder_tokenizer.h"
#include "io/safetensors_checkpoint.h"
#include "models/config_reader.h"
#include "models/folder_parts.h"
#include "models/transformer_family.h"
#include "models/weight_loader.h"

namespace attnscope {

/// What every family opened from a Hugging Face folder shares, encoder or decoder: the folder's
/// config.json, tokenizer and checkpoint, the root module every parameter is registered under,
/// the tokenizer/vocabulary check, the tensor lookup, the frozen weight load and the ModelInfo
/// fields all of them fill. EncoderFamily and DecoderFamily add what their kind needs.
class FolderFamily : public TransformerFamily {
 public:
  std::vector<Token> tokenize(const std::string& text) const override {
    return m_tokenizer.encode(text);
  }
  Token vocabularyToken(int64_t id) const override { return m_tokenizer.tokenOf(id); }
  torch::nn::Module& module() override { return *m_root; }

 protected:
  explicit FolderFamily(const std::string& folder);
  /// The same parts given in memory (a GGUF file's).
  explicit FolderFamily(FolderParts parts);
  /// kind (also the name and, unless given, the variant), sizes and causality, and the bytes of
  /// the parameters under the root (the memory estimate's weights).
  ModelInfo folderInfo(const std::string& kind, const std::string& variant, int layers, int heads,
                       int kvHeads, int width, int positions, bool causal) const;
  /// The root to register the family's modules under, by their checkpoint names, once the
  /// folder's tokenizer is known to fit an embedding of vocabSize rows: a larger tokenizer is
  /// refused, naming both files and both sizes, before anything is built.
  torch::nn::Module& rootForVocabulary(int vocabSize);
  /// The same for a vocabulary other than the folder tokenizer's (Marian's vocab.json): `tokens`
  /// ids read from `tokensSource`.
  torch::nn::Module& rootForVocabulary(int vocabSize, std::size_t tokens,
                                       const std::string& tokensSource);
  /// The same for a family whose root is a module of its own type (GPT-2's Gpt2Stack):
  /// makeRoot() builds it only once the vocabulary fits, and it becomes the root. Returns it.
  template <typename MakeRoot>
  auto rootForVocabulary(int vocabSize, MakeRoot&& makeRoot) -> decltype(makeRoot()) {
    rootForVocabulary(vocabSize);
    auto root = makeRoot();
    m_root = root.ptr();
    return root;
  }
  /// Whether the checkpoint (or a GGUF file's packed matrices) holds a tensor of that name, with or
  /// without the prefix.
  bool hasTensor(const std::string& name, const std::string& prefix) const;
  /// Loads every parameter with requires_grad off (F32 mapped, F16/BF16 kept compact); returns
  /// the checkpoint tensors the rules ignored.
  std::vector<std::string> loadFrozen(torch::nn::Module& module, const WeightRules& rules,
                                      const std::string& summary);

  ConfigReader m_config;
  FolderTokenizer m_tokenizer;
  SafetensorsCheckpoint m_checkpoint;             // mapped weights: lives as long as the modules
  std::string m_fileSummary;                      // ModelInfo::fileSummary
  std::shared_ptr<const PackedWeights> m_packed;  // a GGUF file's blocks: as long as the modules

 private:
  // After m_checkpoint, so destroyed before it: the modules hold views of its mapped weights.
  std::shared_ptr<torch::nn::Module> m_root = std::make_shared<torch::nn::Module>();
};

}  // namespace attnscope
