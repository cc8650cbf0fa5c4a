// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <vector>

#include "attnscope/token.h"

namespace attnscope {

/// The tokens [first, last] of a sequence that spell one word of the input.
struct WordSpan {
  int first = 0;
  int last = 0;
  int size() const { return last - first + 1; }
  bool operator==(const WordSpan& o) const { return first == o.first && last == o.last; }
};

/// Groups the first `count` tokens of a sequence into words, so views can merge subword tokens.
/// A token continues the previous token's word when neither is special, nothing lies between them
/// in the input (when both have offsets), and the junction falls inside a word: inside one
/// character split across tokens (byte-level BPE), or between two word characters (letters,
/// digits, combining marks, an apostrophe between letters): "token" + "ization", WordPiece's
/// "##s", "isn" + "'" + "t". A token whose text begins with whitespace starts a word; punctuation
/// and specials stand alone. The spans cover [0, count) in order; count < 0 means every token.
std::vector<WordSpan> wordSpans(const std::vector<Token>& tokens, int count = -1);

}  // namespace attnscope
