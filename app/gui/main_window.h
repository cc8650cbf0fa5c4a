// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFont>
#include <QMainWindow>

#include <memory>
#include <optional>
#include <vector>

#include "exporter.h"
#include "view_state.h"

class QAction;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QScrollArea;
class QSplitter;
class QTabWidget;

namespace attnscope::gui {

class Document;
class ErrorBanner;
class ModelPanel;
class TrainingPanel;
class Settings;
class ViewSelectorBar;

/// The main window: text and model panel on the left, the five views on the right, menus,
/// toolbar and status bar. It shows what the document says and turns user actions into the
/// document's intents; exports, sessions and preferences are handled here because they need
/// dialogs.
class MainWindow final : public QMainWindow {
  Q_OBJECT
 public:
  /// The title exports get: view, head, model, and what the view leaves out.
  QString defaultTitle() const;
  /// `settings` may be null (tests): then nothing is restored or saved.
  MainWindow(Document* document, Settings* settings, QWidget* parent = nullptr);
  ~MainWindow() override;

  /// What the command line asked for. Without a session or text, the last configuration returns.
  struct StartOptions {
    QString sessionPath;
    std::optional<QString> text;
    std::optional<QString> model;
    /// Where the bundled model is; unset: attnscope::defaultModelPath() (tests point it away).
    std::optional<QString> bundledModel;
  };
  void start(const StartOptions& options);

  bool openSession(const QString& path);
  bool saveSession(const QString& path);
  /// Loads a UTF-8 text file into the input box; false (and a banner) when it is refused.
  bool loadTextFile(const QString& path);
  void setClassroomMode(bool on);

  render::AttentionView* currentView() const;
  render::AttentionView* view(render::ViewKind kind) const;
  QString bannerMessage() const;
  TrainingPanel* trainingPanel() const { return m_trainingPanel; }
  /// The line under the text box with the top next-token candidates; empty when hidden.
  QString nextTokenText() const;

 protected:
  void changeEvent(QEvent* event) override;
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct ViewSlot {
    render::ViewKind kind;
    render::AttentionView* view;
    bool resultStale = true;  // views off screen are updated when their tab is shown
    bool stateStale = true;
  };

  void buildUi();
  void fitModelPanel();
  void buildActions();
  void connectDocument();
  void updateViews(bool resultChanged);
  void syncSlot(ViewSlot& slot);
  void onResult(const render::ResultPtr& result);
  void onError(const QString& message);
  void updateNextTokens(const render::ResultPtr& result);
  void onBusy(bool busy);
  void updateStatus();
  void updateTitle();
  void rebuildRecentMenu();
  void showActionError(const QString& what, const QString& reason);

  void rememberSessionPath(const QString& path);
  void reportExport(const QString& error, const QString& done);
  void exportImage(render::ImageFormat format);
  void copyImage();
  void exportAllHeads();
  void exportData(const QString& kind);
  void openSessionDialog();
  bool saveSessionAs();
  void save();
  void openTextDialog();
  void showShortcuts();
  void showAbout();

  QString defaultExportName(const QString& extension) const;
  render::ExportOptions defaultExportOptions(render::ImageFormat format) const;

  Document* m_document;
  Settings* m_settings;
  QFont m_baseFont;
  QString m_sessionPath;
  QString m_lastDir;
  double m_renderMs = 0;

  QSplitter* m_splitter = nullptr;
  QPlainTextEdit* m_text = nullptr;
  ModelPanel* m_modelPanel = nullptr;
  QScrollArea* m_modelScroll = nullptr;
  QTabWidget* m_leftTabs = nullptr;
  TrainingPanel* m_trainingPanel = nullptr;
  QLabel* m_nextLabel = nullptr;
  ErrorBanner* m_banner = nullptr;
  ViewSelectorBar* m_selector = nullptr;
  QTabWidget* m_tabs = nullptr;
  std::vector<ViewSlot> m_views;
  bool m_bannerFromDocument = false;

  QLabel* m_tokensLabel = nullptr;
  QLabel* m_deviceLabel = nullptr;
  QLabel* m_computeLabel = nullptr;
  QLabel* m_renderLabel = nullptr;
  QLabel* m_busyLabel = nullptr;

  QMenu* m_recentMenu = nullptr;
  QAction* m_classroomAction = nullptr;
  QAction* m_fullScreenAction = nullptr;
  QList<QAction*> m_allActions;
};

}  // namespace attnscope::gui
