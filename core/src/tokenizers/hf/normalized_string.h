// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope::hf {

/// A byte range [begin, end) into the original input text.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
};

/// One replacement while rebuilding a NormalizedString: `text` takes the place of the normalized
/// bytes [from, to). An insertion has from == to; a deletion has an empty text.
struct Edit {
  std::size_t from = 0;
  std::size_t to = 0;
  std::string text;
};

/// Text being normalized and split, that still knows where each of its bytes came from in the
/// original input: Hugging Face tokenizers' NormalizedString. Every byte of `normalized` carries
/// the original span of the character it was made from, so a token's offsets are exact after
/// lower-casing, accent stripping, byte-level mapping, prepended "▁" and the like.
class NormalizedString {
 public:
  NormalizedString() = default;
  /// The whole input, unchanged. `base` is where `text` starts in the full original text.
  explicit NormalizedString(std::string_view text, uint32_t base = 0);

  const std::string& normalized() const { return m_normalized; }
  bool empty() const { return m_normalized.empty(); }
  std::size_t size() const { return m_normalized.size(); }

  /// The original span of normalized bytes [from, to): from the first byte's begin to the last
  /// byte's end. An empty range maps to an empty span at the position it sits in.
  Span originalSpan(std::size_t from, std::size_t to) const;
  /// The span of one normalized byte.
  Span spanOf(std::size_t byte) const { return m_spans[byte]; }

  /// A copy of normalized bytes [from, to), keeping their spans.
  NormalizedString slice(std::size_t from, std::size_t to) const;

  /// Applies non-overlapping edits, given in increasing order of `from`. Replacement bytes take
  /// the union of the spans they replace; inserted bytes take the span of the byte after the
  /// insertion point (the one before, at the end), as Hugging Face aligns a prepended "▁".
  void apply(const std::vector<Edit>& edits);

  /// Replaces every character c by f(c) (UTF-8 out, may be empty or several characters); the
  /// result takes c's span. For per-character normalizers (lowercase, byte-level mapping).
  template <class F>
  void mapCharacters(F&& f);

  /// Prepends text (aligned to the first character, as Hugging Face's Prepend does).
  void prepend(const std::string& text) { apply({Edit{0, 0, text}}); }

  // Used by mapCharacters.
  void assign(std::string normalized, std::vector<Span> spans);
  const std::vector<Span>& spans() const { return m_spans; }

 private:
  std::string m_normalized;
  std::vector<Span> m_spans;  // one per byte of m_normalized
  uint32_t m_end = 0;         // original end, for spans of an empty string
};

/// The UTF-8 length of the character that starts with byte b (1 for a stray continuation byte).
inline std::size_t utf8Length(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? (b >= 0xC0 ? 2 : 1) : b < 0xF0 ? 3 : 4;
}
/// The code point at s[i] (s is valid UTF-8), and its length in *len.
char32_t decodeAt(std::string_view s, std::size_t i, std::size_t* len);
void appendUtf8(std::string& out, char32_t c);

template <class F>
void NormalizedString::mapCharacters(F&& f) {
  std::string out;
  std::vector<Span> spans;
  out.reserve(m_normalized.size());
  spans.reserve(m_normalized.size());
  for (std::size_t i = 0; i < m_normalized.size();) {
    std::size_t len = 0;
    const char32_t c = decodeAt(m_normalized, i, &len);
    const Span span{m_spans[i].begin, m_spans[i + len - 1].end};
    const std::size_t before = out.size();
    f(c, out);
    spans.insert(spans.end(), out.size() - before, span);
    i += len;
  }
  assign(std::move(out), std::move(spans));
}

}  // namespace attnscope::hf
