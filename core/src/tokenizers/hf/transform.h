// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizers/hf/normalized_string.h"

// Helpers the normalizers and pre-tokenizers share (defined in normalizers.cpp).
namespace attnscope::hf::detail {

/// Hugging Face's NormalizedString::transform input: each output character with its change
/// (1 inserted, 0 replaced, -n: n following characters removed).
using CharChanges = std::vector<std::pair<char32_t, int64_t>>;
/// Byte ranges of a text, each marked whether it is a match of the splitting pattern.
using MatchList = std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>>;

void hfTransform(NormalizedString& s, const CharChanges& dest, std::size_t initialOffset);
/// Replaces every matched range by content, aligning as Hugging Face's replace does.
void hfReplace(NormalizedString& s, const MatchList& matches, const std::string& content);
/// The matches and the gaps between them, covering [0, size).
MatchList matchListFromRanges(std::size_t size,
                              const std::vector<std::pair<std::size_t, std::size_t>>& ranges);
std::vector<std::pair<std::size_t, std::size_t>> literalMatches(const std::string& text,
                                                                const std::string& needle);
/// Whether c was assigned by Unicode major.minor (Hugging Face's tables are of older versions).
bool assignedBy(char32_t c, int major, int minor);
/// Every byte to GPT-2's byte alphabet, each keeping its character's span.
void byteLevelMap(NormalizedString& s);

}  // namespace attnscope::hf::detail
