// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace attnscope {

/// A half-open byte range [begin, end) into a text.
struct ByteRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Splits UTF-8 text the way GPT-2 does before BPE, with the pattern
///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
/// written out by hand: std::regex has no \p{..} and is far too slow for a megabyte of text.
/// The pieces tile the text. Throws Error(InvalidArgument) "invalid UTF-8 at byte N of text".
std::vector<ByteRange> splitGpt2Pieces(std::string_view text);

}  // namespace attnscope
