// SPDX-License-Identifier: GPL-3.0-or-later
#include "core_message.h"

#include <QRegularExpression>

#include <utility>
#include <vector>

namespace attnscope::gui {

QString CoreMessage::forWindow(const QString& message) {
  const QString memoryLimit = tr("Edit › Memory Limit…");
  // Longest first: the fuller phrasings name the flag inside a sentence of their own.
  const std::vector<std::pair<QString, QString>> rewrites{
      {QStringLiteral("raise --memory-limit, or the limit in Settings"),
       tr("raise the limit in %1").arg(memoryLimit)},
      {QStringLiteral("(--memory-limit, or the limit in Settings)"), tr("(%1)").arg(memoryLimit)},
      {QStringLiteral("a lower --memory-limit"), tr("a lower limit in %1").arg(memoryLimit)},
      {QStringLiteral("raise --memory-limit"), tr("raise the limit in %1").arg(memoryLimit)},
      {QStringLiteral("raise --max-tokens"),
       tr("shorten the text, or split it into lines: each line is one batch item")},
      {QStringLiteral("use --device cpu or auto"),
       tr("choose Device: CPU or Automatic in the Model tab")},
      {QStringLiteral("needs --model toy"), tr("needs the toy layer")},
      {QStringLiteral("(--model toy)"), tr("(the toy layer)")},
      {QStringLiteral("(--context)"), QString()},
      {QStringLiteral("(--pair)"), QString()},
  };
  QString out = message;
  for (const auto& [flag, window] : rewrites) out.replace(flag, window);
  // Whatever flag is left keeps its words but not the dashes, which mean nothing in the window.
  static const QRegularExpression leftover(QStringLiteral("\\s*\\(--[a-z-]+\\)"));
  out.replace(leftover, QString());
  return out;
}

}  // namespace attnscope::gui
