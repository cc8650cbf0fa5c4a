// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QList>
#include <QObject>

#include "theme.h"

class QAction;
class QKeySequence;
class QMainWindow;
class QMenu;

namespace attnscope::gui {

class Document;
class ExportActions;
class SessionActions;
class ViewTabs;

/// The main window's menus (File, Edit, View, Help), its toolbar and their shortcuts. Each action
/// sends its intent to the document, the exports, the sessions or the views; what only the window
/// can do (its dialogs, classroom mode, themes) it asks for by signal. The actions belong to the
/// window, so their shortcuts work in full screen with the menu bar hidden too.
class MainMenus final : public QObject {
  Q_OBJECT
 public:
  /// Builds the menus and the toolbar of `window` at once.
  MainMenus(QMainWindow* window, Document* document, ViewTabs* tabs, ExportActions* exports,
            SessionActions* sessions);

  /// Every action of the menus, in menu order: what the shortcuts dialog lists.
  const QList<QAction*>& actions() const { return m_actions; }
  /// Ticks View › Classroom Mode (without asking for it again).
  void showClassroomMode(bool on);
  /// Ticks the entry of `theme` in View › Theme.
  void showTheme(Theme theme);
  /// Help › Keyboard Shortcuts and Help › About.
  void showShortcuts();
  void showAbout();

 Q_SIGNALS:
  void textFileRequested();
  /// File › Open Model File… / Open Model Folder…: the model selector's dialogs.
  void modelFileRequested();
  void modelFolderRequested();
  /// File › Download Model…: the Hugging Face Hub dialog.
  void downloadModelRequested();
  void memoryLimitRequested();
  void classroomModeToggled(bool on);
  void themeChosen(Theme theme);

 private:
  /// An action of the window with its shortcut, listed in actions().
  template <typename Slot>
  QAction* action(const QString& text, const QKeySequence& key, Slot slot);
  void buildFileMenu();
  void buildEditMenu();
  void buildViewMenu();
  /// View: the checkable entries bound to fields of the view state.
  void addViewStateActions(QMenu* menu);
  /// View: classroom mode, the theme and full screen.
  void addWindowActions(QMenu* menu);
  void buildHelpMenu();
  void buildToolBar();

  QMainWindow* m_window;
  Document* m_document;
  ViewTabs* m_tabs;
  ExportActions* m_exports;
  SessionActions* m_sessions;
  QList<QAction*> m_actions;
  QList<QAction*> m_themes;
  // The toolbar's actions, made with their menus.
  QAction* m_openSession = nullptr;
  QAction* m_saveSession = nullptr;
  QAction* m_png = nullptr;
  QAction* m_svg = nullptr;
  QAction* m_pdf = nullptr;
  QAction* m_allHeads = nullptr;
  QAction* m_copy = nullptr;
  QAction* m_classroom = nullptr;
};

}  // namespace attnscope::gui
