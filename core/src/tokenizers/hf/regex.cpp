// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/regex.h"

#include <oniguruma.h>

#include <mutex>
#include <optional>

#include "attnscope/error.h"
#include "tokenizers/hf/normalized_string.h"

namespace attnscope::hf {
namespace {

void initialiseOniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string onigMessage(int code, OnigErrorInfo* info) {
  UChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  onig_error_code_to_str(buf, code, info);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct Regex::Impl {
  std::string pattern;  // for messages
  regex_t* regex = nullptr;
  OnigRegion* region = nullptr;
  std::mutex mutex;  // a region is scratch space: one search at a time per compiled pattern
};

Regex::Regex(const std::string& pattern) : m_impl(std::make_unique<Impl>()) {
  initialiseOniguruma();
  OnigErrorInfo info;
  const auto* p = reinterpret_cast<const UChar*>(pattern.data());
  const int r = onig_new(&m_impl->regex, p, p + pattern.size(), ONIG_OPTION_NONE,
                         ONIG_ENCODING_UTF8, ONIG_SYNTAX_ONIGURUMA, &info);
  if (r != ONIG_NORMAL) {
    throw Error(ErrorKind::Format,
                "regex /" + pattern + "/ does not compile: " + onigMessage(r, &info));
  }
  m_impl->pattern = pattern;
  m_impl->region = onig_region_new();
}

Regex::~Regex() {
  if (!m_impl) return;
  if (m_impl->region) onig_region_free(m_impl->region, 1);
  if (m_impl->regex) onig_free(m_impl->regex);
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAll(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  const auto* begin = reinterpret_cast<const UChar*>(text.data());
  const UChar* end = begin + text.size();
  // As the onig crate's find_iter that Hugging Face uses: empty matches count, except one that
  // ends where the previous match ended; then the search moves on by one character.
  std::size_t at = 0;
  std::optional<std::size_t> lastEnd;
  while (at <= text.size()) {
    const int r =
        onig_search(m_impl->regex, begin, end, begin + at, end, m_impl->region, ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) break;
    // An engine error (the retry limit of a pattern that backtracks exponentially, like
    // (a+)+b) is not "no more matches": that would silently stop splitting the rest of the text.
    // Hugging Face's onig binding panics here.
    if (r < 0) {
      throw Error(ErrorKind::Format, "regex /" + m_impl->pattern +
                                         "/ gave up on this text: " + onigMessage(r, nullptr));
    }
    const std::size_t b = static_cast<std::size_t>(m_impl->region->beg[0]);
    const std::size_t e = static_cast<std::size_t>(m_impl->region->end[0]);
    if (b == e && lastEnd && *lastEnd == e) {
      if (e >= text.size()) break;
      at = e + utf8Length(static_cast<unsigned char>(text[e]));
      continue;
    }
    out.emplace_back(b, e);
    lastEnd = e;
    if (b == e) {
      if (e >= text.size()) break;
      at = e + utf8Length(static_cast<unsigned char>(text[e]));
    } else {
      at = e;
    }
  }
  return out;
}

}  // namespace attnscope::hf
