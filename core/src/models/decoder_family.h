// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "attnscope/folder_tokenizer.h"
#include "io/safetensors_checkpoint.h"
#include "models/config_reader.h"
#include "models/llama_config.h"
#include "models/transformer_family.h"
#include "models/weight_loader.h"
#include "nn/rotary_embedding.h"

namespace attnscope {

/// The rotary block's options from a config's rope fields (Llama's rope_theta, GPT-NeoX's
/// rotary_emb_base): rotaryDim dimensions per head, max_position_embeddings for dynamic scaling.
RotaryOptions rotaryOptions(const RopeScalingConfig& scaling, int rotaryDim, double theta,
                            int maxPositions);

/// What the causal decoder families of Hugging Face folders (Llama, Mistral, Qwen, GPT-NeoX,
/// Bloom) share: the folder's config, tokenizer and checkpoint, the tokenizer/vocabulary check,
/// and the ModelInfo fields of a causal language model. A family adds its modules, embedIds,
/// layer, finalNorm and logits.
class DecoderFamily : public TransformerFamily {
 public:
  std::vector<Token> tokenize(const std::string& text) const override {
    return m_tokenizer.encode(text);
  }
  Token vocabularyToken(int64_t id) const override { return m_tokenizer.tokenOf(id); }

 protected:
  explicit DecoderFamily(const std::string& folder);
  /// kind and variant, layers, heads, kv heads, width, positions; causal.
  ModelInfo decoderInfo(const std::string& kind, int layers, int heads, int kvHeads, int width,
                        int positions) const;
  /// Refuses a tokenizer with more tokens than the embedding has rows, naming both.
  void checkVocabulary(int vocabSize) const;
  /// Whether the checkpoint holds a tensor of that name, with or without the prefix.
  bool hasTensor(const std::string& name, const std::string& prefix) const;
  /// Loads every parameter (requires_grad off; F32 mapped, F16/BF16 kept compact).
  void load(torch::nn::Module& module, const WeightRules& rules, const std::string& summary);

  ConfigReader m_config;
  FolderTokenizer m_tokenizer;
  SafetensorsCheckpoint m_checkpoint;  // mapped weights: lives as long as the modules
};

}  // namespace attnscope
