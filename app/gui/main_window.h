// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFont>
#include <QMainWindow>

#include <memory>
#include <optional>

#include "export_actions.h"
#include "startup.h"
#include "theme.h"
#include "view_state.h"

class QLabel;
class QPlainTextEdit;
class QScrollArea;
class QSplitter;
class QTabWidget;

namespace attnscope::gui {

class Document;
class ErrorBanner;
class GenerateBar;
class MainMenus;
class ModelPanel;
class ProbabilitiesPanel;
class SessionActions;
class Settings;
class StatusPanel;
class TrainingPanel;
class ViewSelectorBar;
class ViewTabs;

/// The main window: text and model panel on the left, the ten views on the right, menus,
/// toolbar and status bar. It lays the pieces out and wires them to the document: the views
/// (ViewTabs), the menus and toolbar (MainMenus), exports (ExportActions), sessions
/// (SessionActions), the status bar (StatusPanel) and the start-up decision (initialSession) each
/// live in their own class.
class MainWindow final : public QMainWindow {
  Q_OBJECT
 public:
  /// `settings` may be null (tests): then nothing is restored or saved.
  MainWindow(Document* document, Settings* settings, QWidget* parent = nullptr);
  ~MainWindow() override;

  using StartOptions = gui::StartOptions;
  void start(const StartOptions& options);

  bool openSession(const QString& path);
  bool saveSession(const QString& path);
  /// Loads a UTF-8 text file into the input box; false (and a banner) when it is refused.
  bool loadTextFile(const QString& path);
  void setClassroomMode(bool on);
  /// Applies and remembers the colours (View › Theme).
  void setTheme(Theme theme);

  render::AttentionView* currentView() const;
  render::AttentionView* view(render::ViewKind kind) const;
  QString bannerMessage() const;
  TrainingPanel* trainingPanel() const { return m_trainingPanel; }
  /// The line under the text box with the top next-token candidates; empty when hidden.
  QString nextTokenText() const;
  /// The title exports get: view, head, model, and what the view leaves out.
  QString defaultTitle() const;

 protected:
  void changeEvent(QEvent* event) override;
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void buildUi();
  void fitModelPanel();
  void connectDocument();
  /// The Generate bar, the probabilities panel and the Step view follow the generation.
  void connectGeneration();
  void connectCompare();
  void onResult(const render::ResultPtr& result);
  void onError(const QString& message);
  void updateNextTokens(const render::ResultPtr& result);
  void updateTitle();
  void showActionError(const QString& what, const QString& reason);
  void showMessage(const QString& message);
  void openTextDialog();
  /// Edit › Memory Limit…: the limit in MiB, with the last run's estimate beside it.
  void chooseMemoryLimit();

  Document* m_document;
  Settings* m_settings;
  QFont m_baseFont;
  LastFolder m_folder;

  QSplitter* m_splitter = nullptr;
  QPlainTextEdit* m_text = nullptr;
  ModelPanel* m_modelPanel = nullptr;
  QScrollArea* m_modelScroll = nullptr;
  QTabWidget* m_leftTabs = nullptr;
  TrainingPanel* m_trainingPanel = nullptr;
  QLabel* m_nextLabel = nullptr;
  GenerateBar* m_generateBar = nullptr;
  ProbabilitiesPanel* m_probabilities = nullptr;
  ErrorBanner* m_banner = nullptr;
  ViewSelectorBar* m_selector = nullptr;
  ViewTabs* m_tabs = nullptr;
  StatusPanel* m_status = nullptr;
  ExportActions* m_exports = nullptr;
  SessionActions* m_sessions = nullptr;
  MainMenus* m_menus = nullptr;
  bool m_bannerFromDocument = false;
};

}  // namespace attnscope::gui
