// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "attnscope/tokenizer.h"

namespace attnscope {

/// Words (runs of letters, digits, marks, apostrophes inside words) and single punctuation or
/// symbol characters; whitespace separates and is dropped. Ids are a stable 31-bit hash of the
/// token's bytes, so the same word always gets the same id and the same embedding.
class WordTokenizer final : public Tokenizer {
 public:
  std::vector<Token> encode(const std::string& text) const override;
  std::string name() const override { return "word"; }
};

}  // namespace attnscope
