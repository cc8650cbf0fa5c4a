// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"
#include "attnscope/token.h"

namespace attnscope {

/// The input of a needle test (issue 33): a passage, the needle, inserted into filler text at a
/// relative depth, and a question after it. Which heads, reading the question, find the needle?
struct NeedleText {
  std::string text;
  std::size_t needleBegin = 0, needleEnd = 0;      // the needle's bytes in text
  std::size_t questionBegin = 0, questionEnd = 0;  // the question's bytes (empty: none)
  double at = 0;  // where the needle went: the filler's bytes before it over the filler's size
};

/// The filler with the needle at `depth` (0: before the filler, 1: after it) and the question at
/// the end, each joined by one space where the text at the join is not already white space. The
/// needle goes at the first white space at or after depth·size, so that no word of the filler is
/// split (at the end when no white space follows); in a filler with no white space at all
/// (Chinese, Japanese), at the first character boundary there. Throws Error(InvalidArgument) for an
/// empty needle or a depth outside [0, 1].
NeedleText needleText(const std::string& filler, const std::string& needle,
                      const std::string& question, double depth);

/// The positions of the tokens that hold bytes of [begin, end), specials aside: where a passage
/// of the text went after tokenization.
std::vector<int> tokensOfBytes(const std::vector<Token>& tokens, std::size_t begin,
                               std::size_t end);

/// Each head's attention from the question onto the needle, [layers, heads] row-major (NaN for a
/// layer the group does not keep), read from the stored attention or recomputed on demand, one
/// query row at a time.
struct NeedleRetrieval {
  int layers = 0, heads = 0;
  std::vector<int> needleTokens;  // the keys of the needle
  std::vector<int> queryTokens;   // the query rows read: the question's tokens
  /// Mean over the query rows of the weight on the needle's keys: 1 when the head reads
  /// nothing else.
  std::vector<double> mass;
  /// The share of query rows whose most attended key is one of the needle's: a head that
  /// retrieves, rather than one that spreads a little weight everywhere.
  std::vector<double> top;
};

/// Throws Error(InvalidArgument) when either list is empty or names a token outside the item.
NeedleRetrieval needleRetrieval(const AttentionGroup& g, int item,
                                const std::vector<int>& needleTokens,
                                const std::vector<int>& queryTokens);

}  // namespace attnscope
