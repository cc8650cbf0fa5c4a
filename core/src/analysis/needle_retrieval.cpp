// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/needle_retrieval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/error.h"
#include "attnscope/long_range.h"

namespace attnscope {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

NeedleText needleText(const std::string& filler, const std::string& needle,
                      const std::string& question, double depth) {
  if (needle.empty()) throw Error(ErrorKind::InvalidArgument, "the needle is empty");
  if (!(depth >= 0 && depth <= 1))
    throw Error(ErrorKind::InvalidArgument, "the needle's depth must be in [0, 1]");
  // White space is ASCII, so a position found at one never splits a UTF-8 character.
  const std::size_t target =
      static_cast<std::size_t>(std::llround(depth * static_cast<double>(filler.size())));
  std::size_t at = target;
  while (at < filler.size() && at > 0 && !isSpace(filler[at])) ++at;
  if (std::none_of(filler.begin(), filler.end(), [](char c) { return isSpace(c); })) {
    // A script without spaces between words (Chinese, Japanese): the next character boundary,
    // a byte that is not 10xxxxxx.
    at = target;
    while (at < filler.size() && (static_cast<unsigned char>(filler[at]) & 0xC0) == 0x80) ++at;
  }
  NeedleText t;
  t.at = filler.empty() ? 0.0 : static_cast<double>(at) / static_cast<double>(filler.size());
  t.text = filler.substr(0, at);
  if (!t.text.empty() && !isSpace(t.text.back()) && !isSpace(needle.front())) t.text += ' ';
  t.needleBegin = t.text.size();
  t.text += needle;
  t.needleEnd = t.text.size();
  const std::string rest = filler.substr(at);
  if (!rest.empty() && !isSpace(rest.front()) && !isSpace(needle.back())) t.text += ' ';
  t.text += rest;
  if (!question.empty()) {
    if (!isSpace(t.text.back()) && !isSpace(question.front())) t.text += ' ';
    t.questionBegin = t.text.size();
    t.text += question;
  } else {
    t.questionBegin = t.text.size();
  }
  t.questionEnd = t.text.size();
  return t;
}

std::vector<int> tokensOfBytes(const std::vector<Token>& tokens, std::size_t begin,
                               std::size_t end) {
  std::vector<int> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (!t.special && t.byteBegin < end && t.byteEnd > begin) out.push_back(static_cast<int>(i));
  }
  return out;
}

NeedleRetrieval needleRetrieval(const AttentionGroup& g, int item,
                                const std::vector<int>& needleTokens,
                                const std::vector<int>& queryTokens) {
  if (item < 0 || item >= g.batch())
    throw Error(ErrorKind::InvalidArgument, "batch item " + std::to_string(item) +
                                                " is out of range: the batch has " +
                                                std::to_string(g.batch()));
  const int nq =
      g.queryLengths.empty() ? g.queries() : g.queryLengths[static_cast<std::size_t>(item)];
  const int nk = g.keyLengths.empty() ? g.keys() : g.keyLengths[static_cast<std::size_t>(item)];
  if (needleTokens.empty()) throw Error(ErrorKind::InvalidArgument, "the needle has no tokens");
  if (queryTokens.empty()) throw Error(ErrorKind::InvalidArgument, "no query token to read from");
  for (int k : needleTokens)
    if (k < 0 || k >= nk)
      throw Error(
          ErrorKind::InvalidArgument,
          "needle token " + std::to_string(k) + " is outside the " + std::to_string(nk) + " keys");
  for (int q : queryTokens)
    if (q < 0 || q >= nq)
      throw Error(ErrorKind::InvalidArgument, "query token " + std::to_string(q) +
                                                  " is outside the " + std::to_string(nq) +
                                                  " queries");
  NeedleRetrieval r;
  r.layers = g.layers();
  r.heads = g.heads();
  r.needleTokens = needleTokens;
  r.queryTokens = queryTokens;
  const std::size_t cells = static_cast<std::size_t>(r.layers) * r.heads;
  r.mass.assign(cells, std::numeric_limits<double>::quiet_NaN());
  r.top.assign(cells, std::numeric_limits<double>::quiet_NaN());
  std::vector<char> inNeedle(static_cast<std::size_t>(g.keys()), 0);
  for (int k : needleTokens) inNeedle[static_cast<std::size_t>(k)] = 1;
  // The question's rows are usually contiguous: one read of [first, last] per head (one tile on
  // demand), unless that span would be large (a needle test with no question reads one row).
  const int Tk = g.keys();
  const auto [lo, hi] = std::minmax_element(queryTokens.begin(), queryTokens.end());
  const int first = *lo, span = *hi - *lo + 1;
  const bool block = static_cast<int64_t>(span) * Tk <= (int64_t{1} << 24);
  std::vector<float> rows(static_cast<std::size_t>(block ? span : 1) * Tk);
  for (int l = 0; l < r.layers; ++l) {
    if (!g.hasLayer(l)) continue;
    for (int h = 0; h < r.heads; ++h) {
      double mass = 0, top = 0;
      if (block) attentionRows(g, l, item, h, first, first + span, rows.data());
      for (int q : queryTokens) {
        const float* row = rows.data() + (block ? static_cast<std::size_t>(q - first) * Tk : 0);
        if (!block) attentionRows(g, l, item, h, q, q + 1, rows.data());
        double m = 0;
        int best = 0;
        for (int k = 0; k < nk; ++k) {
          if (inNeedle[static_cast<std::size_t>(k)]) m += row[static_cast<std::size_t>(k)];
          if (row[static_cast<std::size_t>(k)] > row[static_cast<std::size_t>(best)]) best = k;
        }
        mass += m;
        top += inNeedle[static_cast<std::size_t>(best)] ? 1 : 0;
      }
      const std::size_t i = static_cast<std::size_t>(l) * r.heads + h;
      r.mass[i] = mass / static_cast<double>(queryTokens.size());
      r.top[i] = top / static_cast<double>(queryTokens.size());
    }
  }
  return r;
}

}  // namespace attnscope
