// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "attnscope/sentencepiece_tokenizer.h"
#include "attnscope/token.h"

namespace attnscope {

/// Marian's vocabulary (Helsinki-NLP opus-mt folders): the pieces of source.spm and target.spm
/// mapped to the model's ids through vocab.json, because the SentencePiece models' own ids are not
/// the model's. A piece vocab.json lacks reads as its "<unk>".
class MarianVocabulary final {
 public:
  /// Reads source.spm, target.spm and vocab.json from the folder. Throws Error(Io) naming a
  /// missing file, Error(Format) for a malformed one (a vocab.json that is not an object of
  /// whole-number ids, or has no "<unk>"), Error(Unavailable) without libsentencepiece.
  explicit MarianVocabulary(const std::string& folder);

  /// A source text (target false) through source.spm or a target through target.spm, each piece
  /// given its vocab.json id; byte spans and labels are SentencePiece's.
  std::vector<Token> encode(const std::string& text, bool target) const;
  /// The piece of a model id, "▁" shown as "␣" in the label and decoded as a space in the text;
  /// "<...>" pieces are special, ids vocab.json lacks are unknown ("<id N>").
  Token tokenOf(int64_t id) const;
  /// Largest id + 1.
  std::size_t size() const { return m_pieces.empty() ? 0 : m_pieces.rbegin()->first + 1; }
  /// vocab.json's path, for messages.
  const std::string& source() const { return m_file; }

 private:
  std::string m_file;
  SentencePieceTokenizer m_source, m_target;
  std::unordered_map<std::string, int64_t> m_ids;
  std::map<int64_t, std::string> m_pieces;
  int64_t m_unk = 0;
};

}  // namespace attnscope
