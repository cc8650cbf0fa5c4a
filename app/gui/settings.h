// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

#include "session.h"

class QSettings;

namespace attnscope::gui {

/// The one place that knows the keys and types of the app's persistent preferences. Everything
/// else asks this class, so a renamed key or a changed default is a one-line edit.
class Settings final {
 public:
  static constexpr int kMaxRecentSessions = 8;

  /// The user's settings (QSettings with the application's organisation and name).
  Settings();
  /// Settings kept in an INI file, for tests.
  explicit Settings(const QString& iniPath);
  ~Settings();

  QByteArray windowGeometry() const;
  void setWindowGeometry(const QByteArray& geometry);
  QByteArray windowState() const;
  void setWindowState(const QByteArray& state);
  QByteArray splitterState() const;
  void setSplitterState(const QByteArray& state);

  QString palette() const;  // viridis | magma | cividis | greyscale
  void setPalette(const QString& palette);
  bool classroomMode() const;
  QString theme() const;  // system | light | dark
  void setTheme(const QString& theme);
  void setClassroomMode(bool on);
  /// What a run or opening a model may use, in MiB (RunLimits; 8192 by default, 256 at least).
  int memoryLimitMiB() const;
  void setMemoryLimitMiB(int mib);
  static constexpr int kMinMemoryLimitMiB = 256;
  static constexpr int kMaxMemoryLimitMiB = 1 << 24;  // 16 TiB

  /// The configuration the window had when it was last closed, stored as session JSON.
  std::optional<Session> lastConfiguration() const;
  void setLastConfiguration(const Session& session);

  /// Most recent first; paths that no longer exist are kept until opening them fails.
  QStringList recentSessions() const;
  void addRecentSession(const QString& path);
  void removeRecentSession(const QString& path);
  void clearRecentSessions();

  void sync();

 private:
  std::unique_ptr<QSettings> m_settings;
};

}  // namespace attnscope::gui
