// SPDX-License-Identifier: GPL-3.0-or-later
#include "session_actions.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>

#include "document.h"
#include "export_actions.h"
#include "session_file.h"
#include "settings.h"

namespace attnscope::gui {

SessionActions::SessionActions(Document* document, Settings* settings, LastFolder* folder,
                               QWidget* dialogParent)
    : QObject(dialogParent),
      m_document(document),
      m_settings(settings),
      m_folder(folder),
      m_parent(dialogParent) {}

bool SessionActions::isSessionPath(const QString& path) {
  return path.endsWith(QStringLiteral(".attnscope"), Qt::CaseInsensitive);
}

void SessionActions::setRecentMenu(QMenu* menu) {
  m_recent = menu;
  rebuildRecentMenu();
}

void SessionActions::remember(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  m_folder->path = QFileInfo(path).absolutePath();
  if (m_settings) m_settings->addRecentSession(absolute);
  m_document->setSessionPath(absolute);
  rebuildRecentMenu();
}

bool SessionActions::open(const QString& path) {
  Session session;
  const QString error = SessionFile::load(path, &session);
  if (!error.isEmpty()) {
    Q_EMIT failed(tr("Could not open the session"), error);
    return false;
  }
  m_document->loadSession(session);
  Q_EMIT opened(session);
  remember(path);
  Q_EMIT finished(tr("Opened %1").arg(QFileInfo(path).fileName()));
  return true;
}

bool SessionActions::save(const QString& path) {
  if (m_document->hasMemoryOnlyModel()) {
    // Saving would write a session whose model cannot be found again; the snapshot must become a
    // file first. Nothing is lost: the document is unchanged.
    Q_EMIT failed(
        tr("Could not save the session"),
        tr("the model is a training snapshot that exists only in memory, so the session "
           "could not be opened again. Save the snapshot first (Train tab, \"Save model…\"), "
           "open that file, then save the session."));
    return false;
  }
  const QString error = SessionFile::save(path, m_document->session());
  if (!error.isEmpty()) {
    Q_EMIT failed(tr("Could not save the session"), error);
    return false;
  }
  remember(path);
  Q_EMIT finished(tr("Saved %1").arg(QFileInfo(path).fileName()));
  return true;
}

void SessionActions::openDialog() {
  const QString path =
      QFileDialog::getOpenFileName(m_parent, tr("Open Session"), m_folder->path,
                                   tr("attnscope sessions (*.attnscope);;All files (*)"));
  if (!path.isEmpty()) open(path);
}

bool SessionActions::saveAs() {
  const QString current = m_document->sessionPath();
  const QString suggested =
      current.isEmpty() ? QDir(m_folder->path).filePath(tr("untitled.attnscope")) : current;
  QString path = QFileDialog::getSaveFileName(m_parent, tr("Save Session"), suggested,
                                              tr("attnscope sessions (*.attnscope)"));
  if (path.isEmpty()) return false;
  if (!isSessionPath(path)) path += QStringLiteral(".attnscope");
  return save(path);
}

void SessionActions::saveOrAsk() {
  if (m_document->sessionPath().isEmpty())
    saveAs();
  else
    save(m_document->sessionPath());
}

void SessionActions::rebuildRecentMenu() {
  if (!m_recent) return;
  m_recent->clear();
  const QStringList recent = m_settings ? m_settings->recentSessions() : QStringList();
  for (int i = 0; i < recent.size(); ++i) {
    const QString path = recent[i];
    QAction* a =
        m_recent->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()));
    a->setToolTip(path);
    a->setStatusTip(path);
    connect(a, &QAction::triggered, this, [this, path] {
      if (!open(path) && m_settings && !QFileInfo::exists(path)) {
        m_settings->removeRecentSession(path);
        rebuildRecentMenu();
      }
    });
  }
  if (!recent.isEmpty()) {
    m_recent->addSeparator();
    m_recent->addAction(tr("Clear Recent Sessions"), this, [this] {
      if (m_settings) m_settings->clearRecentSessions();
      rebuildRecentMenu();
    });
  }
  m_recent->setEnabled(!recent.isEmpty());
}

}  // namespace attnscope::gui
