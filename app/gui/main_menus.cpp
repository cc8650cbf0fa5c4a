// SPDX-License-Identifier: GPL-3.0-or-later
#include "main_menus.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStyle>
#include <QToolBar>

#include <utility>

#include "document.h"
#include "export_actions.h"
#include "heatmap_view.h"
#include "pipeline_view.h"
#include "session_actions.h"
#include "shortcuts_dialog.h"
#include "view_tabs.h"

namespace attnscope::gui {

MainMenus::MainMenus(QMainWindow* window, Document* document, ViewTabs* tabs,
                     ExportActions* exports, SessionActions* sessions)
    : QObject(window),
      m_window(window),
      m_document(document),
      m_tabs(tabs),
      m_exports(exports),
      m_sessions(sessions) {
  buildFileMenu();
  buildEditMenu();
  buildViewMenu();
  buildHelpMenu();
  buildToolBar();
}

template <typename Slot>
QAction* MainMenus::action(const QString& text, const QKeySequence& key, Slot slot) {
  auto* a = new QAction(text, m_window);
  if (!key.isEmpty()) a->setShortcut(key);
  connect(a, &QAction::triggered, this, slot);
  m_window->addAction(a);  // shortcuts work in full screen, with the menu bar hidden too
  m_actions << a;
  return a;
}

void MainMenus::buildFileMenu() {
  QStyle* s = m_window->style();
  QMenu* file = m_window->menuBar()->addMenu(tr("&File"));
  m_openSession =
      action(tr("&Open Session…"), QKeySequence::Open, [this] { m_sessions->openDialog(); });
  m_openSession->setIcon(s->standardIcon(QStyle::SP_DialogOpenButton));
  file->addAction(m_openSession);
  m_sessions->setRecentMenu(file->addMenu(tr("Open &Recent")));
  m_saveSession =
      action(tr("&Save Session"), QKeySequence::Save, [this] { m_sessions->saveOrAsk(); });
  m_saveSession->setIcon(s->standardIcon(QStyle::SP_DialogSaveButton));
  file->addAction(m_saveSession);
  file->addAction(
      action(tr("Save Session &As…"), QKeySequence::SaveAs, [this] { m_sessions->saveAs(); }));
  file->addSeparator();
  // A GGUF file (any name: Ollama's blobs have no extension), a safetensors or .bin checkpoint.
  file->addAction(
      action(tr("Open &Model File…"), QKeySequence(), [this] { Q_EMIT modelFileRequested(); }));
  file->addAction(
      action(tr("Open Model &Folder…"), QKeySequence(), [this] { Q_EMIT modelFolderRequested(); }));
  file->addAction(
      action(tr("&Download Model…"), QKeySequence(), [this] { Q_EMIT downloadModelRequested(); }));
  file->addAction(action(tr("Load &Text File…"), QKeySequence(tr("Ctrl+Shift+O")),
                         [this] { Q_EMIT textFileRequested(); }));
  file->addSeparator();
  QMenu* exportMenu = file->addMenu(tr("&Export"));
  m_png = action(tr("View as &PNG…"), QKeySequence(tr("Ctrl+E")),
                 [this] { m_exports->exportImage(render::ImageFormat::Png); });
  m_svg = action(tr("View as &SVG…"), QKeySequence(tr("Ctrl+Alt+S")),
                 [this] { m_exports->exportImage(render::ImageFormat::Svg); });
  m_pdf = action(tr("View as P&DF…"), QKeySequence(tr("Ctrl+Alt+P")),
                 [this] { m_exports->exportImage(render::ImageFormat::Pdf); });
  m_allHeads = action(tr("&All Heads to Folder…"), QKeySequence(tr("Ctrl+Shift+E")),
                      [this] { m_exports->exportAllHeads(); });
  QAction* npy = action(tr("Attention as .&npy…"), QKeySequence(),
                        [this] { m_exports->exportData(QStringLiteral("npy")); });
  QAction* csv = action(tr("Attention as .&csv…"), QKeySequence(),
                        [this] { m_exports->exportData(QStringLiteral("csv")); });
  QAction* json = action(tr("&Trace as .json…"), QKeySequence(),
                         [this] { m_exports->exportData(QStringLiteral("json")); });
  m_png->setIcon(s->standardIcon(QStyle::SP_DriveFDIcon));
  exportMenu->addActions({m_png, m_svg, m_pdf});
  exportMenu->addSeparator();
  exportMenu->addAction(m_allHeads);
  exportMenu->addSeparator();
  exportMenu->addActions({npy, csv, json});
  file->addSeparator();
  file->addAction(action(tr("&Quit"), QKeySequence::Quit, [this] { m_window->close(); }));
}

void MainMenus::buildEditMenu() {
  QMenu* edit = m_window->menuBar()->addMenu(tr("&Edit"));
  m_copy = action(tr("&Copy View Image"), QKeySequence(tr("Ctrl+Shift+C")),
                  [this] { m_exports->copyImage(); });
  m_copy->setIcon(m_window->style()->standardIcon(QStyle::SP_FileDialogDetailedView));
  edit->addAction(m_copy);
  // Plain Ctrl+C copies the image only while the views have focus; in the text box it copies text.
  auto* copyInViews = new QAction(tr("Copy"), m_tabs);
  copyInViews->setShortcut(QKeySequence::Copy);
  copyInViews->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(copyInViews, &QAction::triggered, this, [this] { m_exports->copyImage(); });
  m_tabs->addAction(copyInViews);
  edit->addSeparator();
  edit->addAction(
      action(tr("&Recompute Now"), QKeySequence(Qt::Key_F5), [this] { m_document->recompute(); }));
  edit->addAction(
      action(tr("&Memory Limit…"), QKeySequence(), [this] { Q_EMIT memoryLimitRequested(); }));
}

void MainMenus::buildViewMenu() {
  QMenu* viewMenu = m_window->menuBar()->addMenu(tr("&View"));
  viewMenu->addAction(
      action(tr("Next &Head"), QKeySequence(tr("Alt+Right")), [this] { m_document->stepHead(1); }));
  viewMenu->addAction(action(tr("Previous H&ead"), QKeySequence(tr("Alt+Left")),
                             [this] { m_document->stepHead(-1); }));
  viewMenu->addAction(action(tr("Next &Layer"), QKeySequence(tr("Alt+Down")),
                             [this] { m_document->stepLayer(1); }));
  viewMenu->addAction(action(tr("Previous La&yer"), QKeySequence(tr("Alt+Up")),
                             [this] { m_document->stepLayer(-1); }));
  viewMenu->addAction(action(tr("Next &Sentence"), QKeySequence(tr("Alt+PgDown")),
                             [this] { m_document->stepItem(1); }));
  viewMenu->addAction(action(tr("Previous Se&ntence"), QKeySequence(tr("Alt+PgUp")),
                             [this] { m_document->stepItem(-1); }));
  viewMenu->addSeparator();
  for (int i = 0; i < m_tabs->count(); ++i) {
    // Ctrl+1 … Ctrl+9, then Ctrl+0 for the tenth view, as the digits lie on the keyboard.
    viewMenu->addAction(
        action(m_tabs->tabText(i),
               i < 10 ? QKeySequence(QStringLiteral("Ctrl+%1").arg((i + 1) % 10)) : QKeySequence(),
               [this, i] { m_tabs->setCurrentIndex(i); }));
  }
  viewMenu->addSeparator();
  // Ctrl+0 is the tenth view's. The pipeline view's zoom when it is shown, else the heatmap's
  // (double-clicking either does it too).
  viewMenu->addAction(action(tr("&Reset Zoom"), QKeySequence(tr("Ctrl+Alt+0")), [this] {
    if (auto* pipeline = qobject_cast<render::PipelineView*>(m_tabs->currentView()))
      pipeline->resetZoom();
    else
      static_cast<render::HeatmapView*>(m_tabs->view(render::ViewKind::Heatmap))->resetZoom();
  }));
  addViewStateActions(viewMenu);
  addWindowActions(viewMenu);
}

void MainMenus::addViewStateActions(QMenu* viewMenu) {
  // A checkable View action bound to one flag of the view state, both ways.
  const auto flagAction = [this, viewMenu](const QString& label, const QKeySequence& keys,
                                           const QString& tip, bool render::ViewState::*flag) {
    QAction* a = action(label, keys, [this, flag](bool on) {
      render::ViewState state = m_document->viewState();
      state.*flag = on;
      m_document->setViewState(state);
    });
    a->setCheckable(true);
    a->setToolTip(tip);
    viewMenu->addAction(a);
    connect(m_document, &Document::viewStateChanged, a,
            [a, flag](const render::ViewState& st) { a->setChecked(st.*flag); });
  };
  flagAction(tr("Show S&cores"), QKeySequence(tr("Ctrl+Shift+S")), QString(),
             &render::ViewState::showScores);
  flagAction(tr("&Hide Special Tokens"), QKeySequence(tr("Ctrl+Shift+H")),
             tr("Leave out [CLS]/[SEP]/<s>/</s> and renormalise the rows"),
             &render::ViewState::hideSpecial);
  flagAction(tr("Merge Subwords into &Words"), QKeySequence(tr("Ctrl+Shift+W")),
             tr("One row and column per word: columns summed, rows averaged"),
             &render::ViewState::mergeWords);
  // Several queries selected with Ctrl/Shift click: their rows summed or averaged.
  QMenu* combine = viewMenu->addMenu(tr("Combine Selected &Queries"));
  auto* combineGroup = new QActionGroup(combine);
  for (const auto& [label, aggregate] : {std::make_pair(tr("&Mean"), render::QueryAggregate::Mean),
                                         std::make_pair(tr("&Sum"), render::QueryAggregate::Sum)}) {
    QAction* a = combine->addAction(label);
    a->setCheckable(true);
    a->setChecked(aggregate == render::QueryAggregate::Mean);
    a->setObjectName(QStringLiteral("combine-") + render::toString(aggregate));
    combineGroup->addAction(a);
    connect(a, &QAction::triggered, this, [this, aggregate = aggregate] {
      render::ViewState state = m_document->viewState();
      state.aggregate = aggregate;
      m_document->setViewState(state);
    });
    connect(m_document, &Document::viewStateChanged, a,
            [a, aggregate = aggregate](const render::ViewState& st) {
              a->setChecked(st.aggregate == aggregate);
            });
  }
}

void MainMenus::addWindowActions(QMenu* viewMenu) {
  m_classroom = action(tr("Classroom &Mode"), QKeySequence(tr("Ctrl+Shift+M")),
                       [this](bool on) { Q_EMIT classroomModeToggled(on); });
  m_classroom->setCheckable(true);
  m_classroom->setToolTip(tr("Large fonts for projectors"));
  QAction* fullScreen = action(tr("&Full Screen"), QKeySequence(Qt::Key_F11), [this](bool on) {
    m_window->setWindowState(on ? (m_window->windowState() | Qt::WindowFullScreen)
                                : (m_window->windowState() & ~Qt::WindowFullScreen));
  });
  fullScreen->setCheckable(true);
  viewMenu->addAction(m_classroom);
  QMenu* themeMenu = viewMenu->addMenu(tr("&Theme"));
  auto* themes = new QActionGroup(this);
  for (const auto& [theme, text] :
       {std::pair{Theme::System, tr("&System")}, std::pair{Theme::Light, tr("&Light")},
        std::pair{Theme::Dark, tr("&Dark")}}) {
    QAction* a = themeMenu->addAction(text);
    a->setCheckable(true);
    a->setData(toString(theme));
    themes->addAction(a);
    connect(a, &QAction::triggered, this, [this, theme = theme] { Q_EMIT themeChosen(theme); });
  }
  m_themes = themes->actions();
  viewMenu->addAction(fullScreen);
}

void MainMenus::buildHelpMenu() {
  QMenu* help = m_window->menuBar()->addMenu(tr("&Help"));
  help->addAction(
      action(tr("&Keyboard Shortcuts"), QKeySequence(tr("Ctrl+/")), [this] { showShortcuts(); }));
  help->addAction(action(tr("&About attnscope"), QKeySequence(), [this] { showAbout(); }));
}

void MainMenus::buildToolBar() {
  QToolBar* toolbar = m_window->addToolBar(tr("Main"));
  toolbar->setObjectName(QStringLiteral("mainToolBar"));
  toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toolbar->addAction(m_openSession);
  toolbar->addAction(m_saveSession);
  toolbar->addSeparator();
  toolbar->addAction(m_png);
  for (QAction* a : {m_svg, m_pdf, m_allHeads}) toolbar->addAction(a);
  toolbar->addAction(m_copy);
  toolbar->addSeparator();
  toolbar->addAction(m_classroom);
}

void MainMenus::showClassroomMode(bool on) {
  const QSignalBlocker blocker(m_classroom);
  m_classroom->setChecked(on);
}

void MainMenus::showTheme(Theme theme) {
  for (QAction* a : m_themes) a->setChecked(a->data().toString() == toString(theme));
}

void MainMenus::showShortcuts() {
  ShortcutsDialog dialog(m_actions, m_window);
  dialog.exec();
}

void MainMenus::showAbout() {
  QMessageBox::about(
      m_window, tr("About attnscope"),
      tr("<h3>attnscope %1</h3><p>See what every attention head of a transformer does "
         "with the text you type.</p><p>Licensed under the GPL, version 3 or later.</p>")
          .arg(QApplication::applicationVersion()));
}

}  // namespace attnscope::gui
