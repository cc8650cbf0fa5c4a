// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnscope/model.h"
#include "attnscope/token.h"

namespace attnscope {

/// The input that reveals induction heads: a seeded random sequence of distinct tokens, written
/// twice. In the second copy each token's previous occurrence is followed by the token that comes
/// next, so a head that copies "what followed last time" scores near 1.
///
/// Model::run takes text, not ids, so the probe is text made of pieces that are each one token of
/// the model and that tokenize back to the same id alone (probePieces). Joined, neighbouring
/// pieces can still merge under BPE; the induction score is computed from the ids the model
/// really saw, so that only shortens the probe (see `expectedIds`).
struct InductionProbe {
  std::vector<Token> sequence;  // [length] the pieces of one copy, in order
  std::string text;             // the pieces' text, twice
  /// The ids the text should tokenize to: sequence's ids, twice.
  std::vector<int64_t> expectedIds() const;
};

/// The distinct tokens of `source` that are neither special nor unknown, have non-empty valid
/// UTF-8 text, and tokenize alone to exactly that one token (specials the tokenizer adds around
/// it aside). In the order of first occurrence.
std::vector<Token> probePieces(const Model& model, const std::string& source);

/// `length` distinct pieces drawn from `pool` without replacement by a seeded shuffle (SplitMix64,
/// so a seed gives the same probe on every platform), written twice. Throws
/// Error(InvalidArgument) when the pool has fewer than `length` pieces or length < 1.
InductionProbe inductionProbe(const std::vector<Token>& pool, int length, uint64_t seed);

}  // namespace attnscope
