// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/token.h"
#include "attnscope/tokenizer.h"

namespace attnscope {

/// What Hugging Face's `encode(text[, pair])` gives: the ids the model is fed, special tokens
/// included where the post-processor puts them.
struct HfEncoding {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;  // vocabulary strings ("Ġthe", "▁w", "[CLS]")
  std::vector<std::size_t> begins;  // byte offsets into the text of the token's sequence;
  std::vector<std::size_t> ends;    // begin == end == 0 for inserted special tokens
  std::vector<uint32_t> typeIds;    // 0: first text, 1: the pair (as the post-processor sets them)
  std::vector<int> sequences;       // 0, 1, or -1 for tokens the post-processor inserted
  std::vector<bool> special;        // inserted, or an added token marked special
  std::vector<std::string>
      labels;  // readable, from the decoder: "␣the"; byte pieces as their character
};

/// A tokenizer.json read into the pipeline Hugging Face tokenizers runs (added tokens,
/// normalizer, pre-tokenizer, BPE / WordPiece / Unigram / WordLevel model, post-processor,
/// decoder), so ids and byte spans equal the library's. Cheap to copy; thread-safe.
class HfTokenizer final : public Tokenizer {
 public:
  /// Throws Error(Io) when unreadable, Error(Format) naming the component and the reason
  /// (`pre_tokenizer: type "Foo" is not supported`).
  static HfTokenizer fromFile(const std::string& path);
  static HfTokenizer fromJson(const std::string& json, const std::string& source);

  HfEncoding encodeIds(const std::string& text, const std::string* pair = nullptr) const;
  /// Tokens with readable labels from the decoder (no raw Ġ, ▁, ## or <0xNN>), byte spans into
  /// the text; special tokens the post-processor inserts have an empty span at their position.
  std::vector<Token> encode(const std::string& text) const override;
  /// A sentence pair as the post-processor joins it; Token::segment is the type id.
  std::vector<Token> encodePair(const std::string& text, const std::string& pair) const;
  std::string name() const override { return "tokenizer.json"; }

  /// One more than the largest id of the model's vocabulary and the added tokens.
  std::size_t vocabSize() const;
  std::optional<int64_t> tokenToId(const std::string& token) const;
  /// The token of an id with its readable label (predictions); unknown ids are marked unknown.
  Token tokenOf(int64_t id) const;
  /// The mask token ("[MASK]", "<mask>") when the vocabulary has one.
  std::optional<std::string> maskToken() const;

 private:
  struct Impl;
  explicit HfTokenizer(std::shared_ptr<const Impl> impl);
  std::vector<Token> tokensOf(const std::string& text, const std::string* pair) const;
  std::shared_ptr<const Impl> m_impl;
};

}  // namespace attnscope
