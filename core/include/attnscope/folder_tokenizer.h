// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnscope/hf_tokenizer.h"
#include "attnscope/token.h"
#include "attnscope/tokenizer.h"

namespace attnscope {

/// The tokenizer a Hugging Face model folder ships, whichever form it has: tokenizer.json first
/// (Hugging Face's pipeline, exactly), else GPT-2's vocab.json + merges.txt, else a SentencePiece
/// model (tokenizer.model, spiece.model, source.spm). Every model family takes its tokenizer from
/// its folder through this.
class FolderTokenizer final : public Tokenizer {
 public:
  /// A model folder, a tokenizer.json, a SentencePiece .model file, or a GGUF file of any name
  /// (recognised by its magic bytes; its tokenizer.ggml.* metadata, vocabulary-only files too).
  /// Throws Error(Io) naming what is missing
  /// ("no tokenizer.json or vocab.json + merges.txt in DIR"), Error(Format) for a malformed file.
  static FolderTokenizer open(const std::string& path);
  /// A tokenizer built elsewhere (from a GGUF file's metadata); `source` names it in messages.
  static FolderTokenizer fromHf(HfTokenizer tokenizer, std::string source);

  std::vector<Token> encode(const std::string& text) const override;
  /// A sentence pair (tokenizer.json with a pair template only; throws Error(InvalidArgument)
  /// otherwise). Token::segment is 0 or 1.
  std::vector<Token> encodePair(const std::string& text, const std::string& pair) const;
  /// Whether encodePair works: a tokenizer.json.
  bool supportsPair() const;
  /// The mask token ("[MASK]", "<mask>") and its id, when the vocabulary has one.
  std::optional<std::pair<std::string, int64_t>> maskToken() const;
  std::string name() const override;
  /// What encode(text[, pair]) gives in Hugging Face (special tokens, type ids). For the
  /// vocab.json + merges.txt form: the BPE ids, no pair (throws Error(InvalidArgument) for one).
  HfEncoding encodeIds(const std::string& text, const std::string* pair = nullptr) const;
  /// Largest id + 1.
  std::size_t vocabSize() const;
  /// The token of an id with its readable label (for predictions).
  Token tokenOf(int64_t id) const;
  /// The file it was read from, for messages.
  const std::string& source() const;

  struct Impl;

 private:
  explicit FolderTokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> m_impl;
};

}  // namespace attnscope
