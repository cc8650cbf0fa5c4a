// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "attnscope/token.h"

namespace attnscope {

/// Turns UTF-8 text into tokens with byte spans. Invalid UTF-8 throws Error(InvalidArgument).
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<Token> encode(const std::string& text) const = 0;
  virtual std::string name() const = 0;
};

}  // namespace attnscope
