// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

#include "session.h"

namespace attnscope::gui {

/// Reads and writes .attnscope session files: versioned JSON holding the text, the model spec
/// (with the toy configuration), run options and view state. Loading is strict: a wrong type, an
/// unknown key or value, or an out-of-range number is an error naming the field, never a partial
/// session. Knows nothing of widgets, so it can be unit-tested and fuzzed on its own.
class SessionFile final {
 public:
  static constexpr int kVersion = 1;
  static constexpr qint64 kMaxFileBytes = 16 * 1024 * 1024;

  static QByteArray toJson(const Session& session);
  /// Parses bytes; on failure returns false and sets *error to a message naming the problem.
  static bool fromJson(const QByteArray& bytes, Session* session, QString* error);

  /// Writes atomically (QSaveFile). Returns an empty string on success, else the reason.
  static QString save(const QString& path, const Session& session);
  /// Returns an empty string on success, else the reason, prefixed with the file name.
  static QString load(const QString& path, Session* session);
};

}  // namespace attnscope::gui
