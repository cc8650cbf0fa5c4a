// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

#include <vector>

#include "attnscope/token.h"

namespace attnscope::render {

/// Whether a space belongs before tokens[i] when token texts are joined into a line of text,
/// although neither text carries one. BPE and SentencePiece tokens carry their space in their text
/// (" cat"); WordPiece drops the spaces it splits on ("the", "cat", "##s" → "s"), but its offsets
/// still have the gap between words. A special token ([CLS], [SEP], [MASK]) reads as a word of its
/// own. Character-level and subword pieces that touch in the input stay joined.
bool needsSpaceBefore(const std::vector<Token>& tokens, int i);

/// The texts of tokens [first, last] joined as the input read, with needsSpaceBefore's spaces
/// (none before `first`); special tokens are left out when `skipSpecial` is set.
QString joinedTokenText(const std::vector<Token>& tokens, int first, int last, bool skipSpecial);

}  // namespace attnscope::render
