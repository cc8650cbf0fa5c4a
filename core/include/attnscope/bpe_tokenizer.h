// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attnscope/tokenizer.h"

namespace attnscope {

/// GPT-2's byte-level BPE tokenizer, giving the same ids as OpenAI's encoder.py and tiktoken's
/// "gpt2" encoding. "<|endoftext|>" in the input is plain text, never the special token.
/// Tokens may hold part of a UTF-8 character; their byte spans tile the input.
/// Immutable after construction, so one instance can serve several threads.
class BpeTokenizer final : public Tokenizer {
 public:
  /// Loads GPT-2's encoder.json (vocab.json) and vocab.bpe (merges.txt, optional "#version"
  /// first line). Throws Error(Io) when a file cannot be read, Error(Format) naming the file when
  /// its contents are malformed.
  static BpeTokenizer fromFiles(const std::string& vocabJsonPath, const std::string& mergesPath);

  std::vector<Token> encode(const std::string& text) const override;
  std::string name() const override { return "gpt2-bpe"; }

  /// Just the ids, for feeding a model without building Token strings.
  std::vector<int64_t> encodeIds(const std::string& text) const;
  /// The bytes of the ids' tokens, concatenated (not necessarily valid UTF-8 for arbitrary ids).
  /// Throws Error(InvalidArgument) for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const;
  std::size_t vocabSize() const { return m_tokenBytes.size(); }
  /// Raw bytes of one token; throws Error(InvalidArgument) for an id outside the vocabulary.
  std::string tokenBytes(int64_t id) const;

 private:
  struct Merge {
    int32_t rank;  // line order in the merges file: lower merges first
    int32_t id;    // the token the pair becomes
  };

  BpeTokenizer() = default;
  void checkId(int64_t id) const;
  /// Runs `visit(pieceBegin, ids of that piece)` for each pre-tokenised piece of text.
  template <typename Visit>
  void forEachPiece(const std::string& text, Visit&& visit) const;

  std::vector<std::string> m_tokenBytes;         // id -> raw bytes
  std::vector<std::string> m_labels;             // id -> axis label, precomputed for encode's sake
  std::array<int32_t, 256> m_byteIds{};          // byte -> id of the one-byte token
  std::unordered_map<uint64_t, Merge> m_merges;  // (left id << 32 | right id) -> merge
};

}  // namespace attnscope
