// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/folder_family.h"

namespace attnscope {

/// What the bidirectional encoder families (BERT, RoBERTa, ELECTRA, DistilBERT, ALBERT) share:
/// the folder's config, tokenizer (sentence pairs, the mask token) and checkpoint, token and
/// token-type ids into the embedding, weights loaded with unknown head tensors tolerated and
/// listed once. A family adds its modules, embedIds and layer.
class EncoderFamily : public FolderFamily {
 public:
  std::vector<Token> tokenizePair(const std::string& text, const std::string& pair) const override;
  std::optional<int64_t> maskTokenId() const override;
  std::vector<std::string> notices() const override;
  Embedded embed(const BatchInput& batch, const RunRequest& request,
                 const torch::Device& device) override;
  /// postNormEncoderLayer writes LayerContext::valueNorms for every encoder family.
  bool supportsValueNorms() const override { return true; }

 protected:
  explicit EncoderFamily(const std::string& folder);
  /// The same parts given in memory (a GGUF file's).
  explicit EncoderFamily(FolderParts parts) : FolderFamily(std::move(parts)) {}
  /// ids, typeIds: [B, T] int64 -> [B, T, C] (embeddings, their LayerNorm, any projection).
  virtual torch::Tensor embedTokens(const torch::Tensor& ids, const torch::Tensor& typeIds) = 0;
  /// The ModelInfo fields every encoder shares.
  ModelInfo encoderInfo(const std::string& kind, int layers, int heads, int width,
                        int positions) const;
  /// loadFrozen, tolerating (and listing once in notices()) tensors of task heads.
  void load(torch::nn::Module& module, WeightRules rules, const std::string& summary);

 private:
  std::vector<std::string> m_ignored;
};

}  // namespace attnscope
