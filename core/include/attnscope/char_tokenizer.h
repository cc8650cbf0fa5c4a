// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "attnscope/tokenizer.h"

namespace attnscope {

/// One token per user-perceived character: a code point plus any combining marks, variation
/// selectors or zero-width-joined code points that follow it. The id of a single code point is
/// the code point itself; a cluster gets a stable 31-bit hash of its bytes.
class CharTokenizer final : public Tokenizer {
 public:
  std::vector<Token> encode(const std::string& text) const override;
  std::string name() const override { return "char"; }
};

}  // namespace attnscope
