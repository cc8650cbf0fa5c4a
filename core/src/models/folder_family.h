// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "attnscope/folder_tokenizer.h"
#include "io/safetensors_checkpoint.h"
#include "models/config_reader.h"
#include "models/transformer_family.h"
#include "models/weight_loader.h"

namespace attnscope {

/// What every family opened from a Hugging Face folder shares, encoder or decoder: the folder's
/// config.json, tokenizer and checkpoint, the tokenizer/vocabulary check, the tensor lookup and
/// the frozen weight load. EncoderFamily and DecoderFamily add what their kind needs.
class FolderFamily : public TransformerFamily {
 public:
  std::vector<Token> tokenize(const std::string& text) const override {
    return m_tokenizer.encode(text);
  }
  Token vocabularyToken(int64_t id) const override { return m_tokenizer.tokenOf(id); }

 protected:
  explicit FolderFamily(const std::string& folder);
  /// kind (also the name and, unless given, the variant), sizes and causality.
  ModelInfo folderInfo(const std::string& kind, const std::string& variant, int layers, int heads,
                       int kvHeads, int width, int positions, bool causal) const;
  /// Refuses a tokenizer with more tokens than the embedding has rows, naming both.
  void checkVocabulary(int vocabSize) const;
  /// Whether the checkpoint holds a tensor of that name, with or without the prefix.
  bool hasTensor(const std::string& name, const std::string& prefix) const;
  /// Loads every parameter with requires_grad off (F32 mapped, F16/BF16 kept compact); returns
  /// the checkpoint tensors the rules ignored.
  std::vector<std::string> loadFrozen(torch::nn::Module& module, const WeightRules& rules,
                                      const std::string& summary);

  ConfigReader m_config;
  FolderTokenizer m_tokenizer;
  SafetensorsCheckpoint m_checkpoint;  // mapped weights: lives as long as the modules
};

}  // namespace attnscope
