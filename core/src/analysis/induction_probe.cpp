// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/induction_probe.h"

#include <algorithm>
#include <unordered_set>

#include "attnscope/error.h"
#include "attnscope/utf8.h"

namespace attnscope {
namespace {

// SplitMix64 (Steele et al.): std::uniform_int_distribution differs between standard libraries,
// and a probe must be the same everywhere for a seed.
uint64_t splitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<Token> withoutSpecials(std::vector<Token> tokens) {
  tokens.erase(
      std::remove_if(tokens.begin(), tokens.end(), [](const Token& t) { return t.special; }),
      tokens.end());
  return tokens;
}

}  // namespace

std::vector<int64_t> InductionProbe::expectedIds() const {
  std::vector<int64_t> ids;
  for (int copy = 0; copy < 2; ++copy)
    for (const Token& t : sequence) ids.push_back(t.id);
  return ids;
}

std::vector<Token> probePieces(const Model& model, const std::string& source) {
  std::vector<Token> pool;
  std::unordered_set<int64_t> seen;
  for (const Token& t : withoutSpecials(model.tokenize(source))) {
    if (t.unknown || t.text.empty() || !isValidUtf8(t.text) || !seen.insert(t.id).second) continue;
    const std::vector<Token> alone = withoutSpecials(model.tokenize(t.text));
    if (alone.size() == 1 && alone.front().id == t.id) pool.push_back(t);
  }
  return pool;
}

InductionProbe inductionProbe(const std::vector<Token>& pool, int length, uint64_t seed) {
  if (length < 1)
    throw Error(
        ErrorKind::InvalidArgument,
        "the induction probe needs at least 1 token per copy, got " + std::to_string(length));
  if (pool.size() < static_cast<std::size_t>(length))
    throw Error(ErrorKind::InvalidArgument,
                "the induction probe needs " + std::to_string(length) +
                    " distinct single-token pieces but the source text has only " +
                    std::to_string(pool.size()) +
                    "; give a longer or more varied text, or a shorter probe");
  std::vector<std::size_t> order(pool.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  uint64_t state = seed;
  // A partial Fisher–Yates shuffle: the first `length` entries are a uniform draw without
  // replacement (the modulo bias is below 2^-40 for any pool that fits in memory).
  for (std::size_t i = 0; i < static_cast<std::size_t>(length); ++i) {
    const std::size_t j = i + splitMix64(state) % (order.size() - i);
    std::swap(order[i], order[j]);
  }
  InductionProbe probe;
  for (int i = 0; i < length; ++i)
    probe.sequence.push_back(pool[order[static_cast<std::size_t>(i)]]);
  std::string once;
  for (const Token& t : probe.sequence) once += t.text;
  probe.text = once + once;
  return probe;
}

}  // namespace attnscope
