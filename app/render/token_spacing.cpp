// SPDX-License-Identifier: GPL-3.0-or-later
#include "token_spacing.h"

namespace attnscope::render {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool hasOffsets(const Token& t) { return t.byteEnd > t.byteBegin; }

}  // namespace

bool needsSpaceBefore(const std::vector<Token>& tokens, int i) {
  if (i <= 0 || i >= static_cast<int>(tokens.size())) return false;
  const Token& prev = tokens[static_cast<std::size_t>(i - 1)];
  const Token& next = tokens[static_cast<std::size_t>(i)];
  if (next.text.empty() || isSpace(next.text.front())) return false;
  if (!prev.text.empty() && isSpace(prev.text.back())) return false;
  if (prev.special || next.special) return true;
  // Something (the space a WordPiece tokenizer split on) lies between them in the input.
  return hasOffsets(prev) && hasOffsets(next) && next.byteBegin > prev.byteEnd;
}

QString joinedTokenText(const std::vector<Token>& tokens, int first, int last, bool skipSpecial) {
  std::string text;
  for (int i = std::max(0, first); i <= last && i < static_cast<int>(tokens.size()); ++i) {
    const Token& t = tokens[static_cast<std::size_t>(i)];
    if (skipSpecial && t.special) continue;
    if (!text.empty() && needsSpaceBefore(tokens, i)) text += ' ';
    text += t.text;
  }
  return QString::fromStdString(text);
}

}  // namespace attnscope::render
