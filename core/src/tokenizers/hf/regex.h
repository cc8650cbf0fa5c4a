// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope::hf {

/// A compiled Unicode regular expression in Oniguruma, the engine Hugging Face tokenizers itself
/// uses, so the patterns of real tokenizer.json files (\p{L}, (?i:…), possessive quantifiers,
/// lookahead) mean exactly what they mean there.
class Regex final {
 public:
  /// Throws Error(Format) with Oniguruma's message for a pattern it cannot compile.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  /// Every non-overlapping match in text, as byte ranges [begin, end), left to right. Empty
  /// matches are reported (a lookahead splits), except one right at the end of the previous match.
  /// Throws Error(Format) when Oniguruma gives up on a search (its retry limit).
  std::vector<std::pair<std::size_t, std::size_t>> findAll(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace attnscope::hf
