// SPDX-License-Identifier: GPL-3.0-or-later
#include "tokenizers/hf/normalized_string.h"

namespace attnscope::hf {

char32_t decodeAt(std::string_view s, std::size_t i, std::size_t* len) {
  const unsigned char b = static_cast<unsigned char>(s[i]);
  std::size_t n = utf8Length(b);
  if (i + n > s.size()) n = 1;
  *len = n;
  if (n == 1) return b;
  char32_t c = b & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return c;
}

void appendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

NormalizedString::NormalizedString(std::string_view text, uint32_t base)
    : m_normalized(text), m_end(base + static_cast<uint32_t>(text.size())) {
  m_spans.resize(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 0;
    decodeAt(text, i, &len);
    const Span span{base + static_cast<uint32_t>(i), base + static_cast<uint32_t>(i + len)};
    for (std::size_t k = 0; k < len; ++k) m_spans[i + k] = span;
    i += len;
  }
}

Span NormalizedString::originalSpan(std::size_t from, std::size_t to) const {
  if (from >= to || from >= m_spans.size()) {
    const uint32_t at = from < m_spans.size() ? m_spans[from].begin : m_end;
    return {at, at};
  }
  return {m_spans[from].begin, m_spans[to - 1].end};
}

NormalizedString NormalizedString::slice(std::size_t from, std::size_t to) const {
  NormalizedString s;
  s.m_normalized = m_normalized.substr(from, to - from);
  s.m_spans.assign(m_spans.begin() + static_cast<std::ptrdiff_t>(from),
                   m_spans.begin() + static_cast<std::ptrdiff_t>(to));
  s.m_end = to < m_spans.size() ? m_spans[to].begin : m_end;
  if (!s.m_spans.empty()) s.m_end = s.m_spans.back().end;
  return s;
}

void NormalizedString::apply(const std::vector<Edit>& edits) {
  if (edits.empty()) return;
  std::string out;
  std::vector<Span> spans;
  out.reserve(m_normalized.size());
  spans.reserve(m_normalized.size());
  std::size_t at = 0;
  for (const Edit& e : edits) {
    out.append(m_normalized, at, e.from - at);
    spans.insert(spans.end(), m_spans.begin() + static_cast<std::ptrdiff_t>(at),
                 m_spans.begin() + static_cast<std::ptrdiff_t>(e.from));
    Span span;
    if (e.from < e.to) {
      span = {m_spans[e.from].begin, m_spans[e.to - 1].end};
    } else if (e.from < m_spans.size()) {
      span = m_spans[e.from];
    } else if (!m_spans.empty()) {
      span = m_spans.back();
    } else {
      span = {m_end, m_end};
    }
    out += e.text;
    spans.insert(spans.end(), e.text.size(), span);
    at = e.to;
  }
  out.append(m_normalized, at, std::string::npos);
  spans.insert(spans.end(), m_spans.begin() + static_cast<std::ptrdiff_t>(at), m_spans.end());
  assign(std::move(out), std::move(spans));
}

void NormalizedString::assign(std::string normalized, std::vector<Span> spans) {
  if (!m_spans.empty()) m_end = m_spans.back().end;
  m_normalized = std::move(normalized);
  m_spans = std::move(spans);
}

}  // namespace attnscope::hf
