// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QObject>
#include <QString>

class QMenu;
class QWidget;

namespace attnscope::gui {

class Document;
class Settings;
struct LastFolder;
struct Session;

/// Open, save, save as and the recent-sessions menu. The session path and the modified flag live
/// in the document; this turns the File menu's actions into them and reports the outcome.
class SessionActions final : public QObject {
  Q_OBJECT
 public:
  /// `settings` may be null (tests): then nothing is remembered.
  SessionActions(Document* document, Settings* settings, LastFolder* folder, QWidget* dialogParent);

  /// The menu rebuilt from the recent sessions (File › Open Recent).
  void setRecentMenu(QMenu* menu);
  void rebuildRecentMenu();

  bool open(const QString& path);
  /// Refuses (and says why) while the model exists only in memory: such a session could not
  /// be opened again.
  bool save(const QString& path);
  bool saveAs();
  /// Save to the session's file, or ask for one when it is untitled.
  void saveOrAsk();
  void openDialog();
  /// After a session came from the command line: remember it like one opened from the menu.
  void remember(const QString& path);

  static bool isSessionPath(const QString& path);

 Q_SIGNALS:
  void failed(const QString& what, const QString& reason);
  void finished(const QString& message);
  /// A session was loaded into the document (the window applies its classroom mode).
  void opened(const attnscope::gui::Session& session);

 private:
  Document* m_document;
  Settings* m_settings;
  LastFolder* m_folder;
  QWidget* m_parent;
  QMenu* m_recent = nullptr;
};

}  // namespace attnscope::gui
