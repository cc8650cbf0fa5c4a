// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

namespace attnscope::gui {

/// Reads a dropped or opened text file for the input box, refusing what is not a reasonable
/// UTF-8 text: binary files (NUL bytes), invalid UTF-8, and files too large to type.
class TextFileLoader final {
 public:
  static constexpr qint64 kMaxBytes = 1024 * 1024;

  /// Returns an empty string on success (text in *text), else the reason naming the file.
  /// maxBytes: larger for training corpora than for the input box.
  static QString load(const QString& path, QString* text, qint64 maxBytes = kMaxBytes);
  /// The same checks on bytes already in memory.
  static QString decode(const QByteArray& bytes, const QString& name, QString* text,
                        qint64 maxBytes = kMaxBytes);
};

}  // namespace attnscope::gui
