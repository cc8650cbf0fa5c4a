// SPDX-License-Identifier: GPL-3.0-or-later
#include "settings.h"

#include <algorithm>

#include <QDir>
#include <QFileInfo>
#include <QSettings>

#include "session_file.h"

namespace attnscope::gui {

namespace {
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");
const QString kSplitter = QStringLiteral("window/splitter");
const QString kPalette = QStringLiteral("view/palette");
const QString kClassroom = QStringLiteral("view/classroom");
const QString kLast = QStringLiteral("session/last");
const QString kRecent = QStringLiteral("session/recent");
}  // namespace

Settings::Settings() : m_settings(std::make_unique<QSettings>()) {}

Settings::Settings(const QString& iniPath)
    : m_settings(std::make_unique<QSettings>(iniPath, QSettings::IniFormat)) {}

Settings::~Settings() = default;

QByteArray Settings::windowGeometry() const { return m_settings->value(kGeometry).toByteArray(); }
void Settings::setWindowGeometry(const QByteArray& g) { m_settings->setValue(kGeometry, g); }
QByteArray Settings::windowState() const { return m_settings->value(kState).toByteArray(); }
void Settings::setWindowState(const QByteArray& s) { m_settings->setValue(kState, s); }
QByteArray Settings::splitterState() const { return m_settings->value(kSplitter).toByteArray(); }
void Settings::setSplitterState(const QByteArray& s) { m_settings->setValue(kSplitter, s); }

QString Settings::palette() const {
  const QString p = m_settings->value(kPalette, QStringLiteral("viridis")).toString();
  const QStringList known = {"viridis", "magma", "cividis", "greyscale"};
  return known.contains(p) ? p : QStringLiteral("viridis");
}
void Settings::setPalette(const QString& p) { m_settings->setValue(kPalette, p); }

QString Settings::theme() const {
  const QString t =
      m_settings->value(QStringLiteral("view/theme"), QStringLiteral("system")).toString();
  return QStringList{"system", "light", "dark"}.contains(t) ? t : QStringLiteral("system");
}
void Settings::setTheme(const QString& t) { m_settings->setValue(QStringLiteral("view/theme"), t); }

int Settings::memoryLimitMiB() const {
  bool ok = false;
  const int mib = m_settings->value(QStringLiteral("compute/memoryLimitMiB"), 8192).toInt(&ok);
  // A hand-edited or corrupt value falls back to the default rather than to no limit at all.
  return ok && mib >= kMinMemoryLimitMiB && mib <= kMaxMemoryLimitMiB ? mib : 8192;
}

void Settings::setMemoryLimitMiB(int mib) {
  m_settings->setValue(QStringLiteral("compute/memoryLimitMiB"),
                       std::clamp(mib, kMinMemoryLimitMiB, kMaxMemoryLimitMiB));
}

bool Settings::classroomMode() const { return m_settings->value(kClassroom, false).toBool(); }
void Settings::setClassroomMode(bool on) { m_settings->setValue(kClassroom, on); }

std::optional<Session> Settings::lastConfiguration() const {
  const QByteArray json = m_settings->value(kLast).toByteArray();
  if (json.isEmpty()) return std::nullopt;
  Session s;
  QString error;
  // A configuration from an older, incompatible version is simply forgotten.
  if (!SessionFile::fromJson(json, &s, &error)) return std::nullopt;
  return s;
}
void Settings::setLastConfiguration(const Session& s) {
  m_settings->setValue(kLast, SessionFile::toJson(s));
}

QStringList Settings::recentSessions() const { return m_settings->value(kRecent).toStringList(); }

void Settings::addRecentSession(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList list = recentSessions();
  list.removeAll(absolute);
  list.prepend(absolute);
  while (list.size() > kMaxRecentSessions) list.removeLast();
  m_settings->setValue(kRecent, list);
}

void Settings::removeRecentSession(const QString& path) {
  QStringList list = recentSessions();
  list.removeAll(path);
  m_settings->setValue(kRecent, list);
}

void Settings::clearRecentSessions() { m_settings->remove(kRecent); }

void Settings::sync() { m_settings->sync(); }

}  // namespace attnscope::gui
