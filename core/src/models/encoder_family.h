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

/// What the bidirectional encoder families (BERT, RoBERTa, ELECTRA, DistilBERT, ALBERT) share:
/// the folder's config, tokenizer (sentence pairs, the mask token) and checkpoint, token and
/// token-type ids into the embedding, weights loaded with unknown head tensors tolerated and
/// listed once. A family adds its modules, embedIds and layer.
class EncoderFamily : public TransformerFamily {
 public:
  std::vector<Token> tokenize(const std::string& text) const override {
    return m_tokenizer.encode(text);
  }
  std::vector<Token> tokenizePair(const std::string& text, const std::string& pair) const override;
  Token vocabularyToken(int64_t id) const override { return m_tokenizer.tokenOf(id); }
  std::optional<int64_t> maskTokenId() const override;
  std::vector<std::string> notices() const override;
  Embedded embed(const BatchInput& batch, const RunRequest& request,
                 const torch::Device& device) override;

 protected:
  explicit EncoderFamily(const std::string& folder);
  /// ids, typeIds: [B, T] int64 -> [B, T, C] (embeddings, their LayerNorm, any projection).
  virtual torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) = 0;
  /// The ModelInfo fields every encoder shares.
  ModelInfo encoderInfo(const std::string& kind, int layers, int heads, int width,
                        int positions) const;
  /// Refuses a tokenizer with more tokens than the embedding has rows, naming both.
  void checkVocabulary(int vocabSize) const;
  /// Whether the checkpoint holds a tensor of that name (with or without the family's prefix).
  bool hasTensor(const std::string& name, const std::string& prefix) const;
  void load(torch::nn::Module& module, WeightRules rules, const std::string& summary);

  ConfigReader m_config;
  FolderTokenizer m_tokenizer;
  SafetensorsCheckpoint m_checkpoint;  // mapped weights: lives as long as the modules

 private:
  std::vector<std::string> m_ignored;
};

}  // namespace attnscope
