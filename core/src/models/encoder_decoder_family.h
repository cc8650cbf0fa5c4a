// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/folder_family.h"

namespace attnscope {

/// What the encoder-decoder families of Hugging Face folders (T5, BART, Marian) share beyond
/// FolderFamily: the source ends with the end-of-sequence token (the tokenizer's template adds it;
/// a bare SentencePiece model does not, so it is added here), a target is read without it (teacher
/// forcing feeds decoder_start_token_id and the target, as Hugging Face's shift_right of the
/// labels does), and generation stops at eos_token_id. A family adds its modules, embedIds,
/// layer, finalNorm, embedDecoderIds, decoderLayer, decoderFinalNorm and logits.
class EncoderDecoderFamily : public FolderFamily {
 public:
  std::vector<Token> tokenize(const std::string& text) const override;
  std::vector<Token> tokenizeTarget(const std::string& text) const override;
  Token decoderStartToken() const override;
  std::optional<int64_t> endTokenId() const override { return m_eos; }
  /// T5, BART and Marian attend through projectedAttention (cross-attention's keys and values
  /// cached once), T5's decoder bias takes the cached length as its query offset, and BART's and
  /// Marian's embedDecoderIdsAt their positions.
  bool supportsKvCache() const override { return true; }

 protected:
  explicit EncoderDecoderFamily(const std::string& folder) : FolderFamily(folder) {}
  /// The family's decoder_start_token_id and eos_token_id, as its config read them (the defaults
  /// differ by family): set once, in the family's constructor, before any tokenizing.
  void setSpecialTokens(int64_t decoderStart, int64_t eos) {
    m_start = decoderStart;
    m_eos = eos;
  }
  /// The tokens of a source (target false) or target text before the end token is handled.
  /// Default: the folder's tokenizer for both (Marian has one SentencePiece model per side).
  virtual std::vector<Token> encodeText(const std::string& text, bool target) const {
    return m_tokenizer.encode(text);
  }
  /// kind and variant, encoder and decoder layers, heads, width, positions (0: no limit).
  ModelInfo encoderDecoderInfo(const std::string& kind, int layers, int decoderLayers, int heads,
                               int width, int positions) const;

 private:
  int64_t m_start = 0;
  std::optional<int64_t> m_eos;
};

}  // namespace attnscope
