// SPDX-License-Identifier: GPL-3.0-or-later
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include <cmath>

#include "attnscope/model_catalog.h"
#include "attnscope/tiny_gpt.h"
#include "document.h"
#include "error_banner.h"
#include "export_dialog.h"
#include "head_matrix.h"
#include "model_panel.h"
#include "session_file.h"
#include "settings.h"
#include "shortcuts_dialog.h"
#include "text_file_loader.h"
#include "training_panel.h"
#include "view_factory.h"
#include "view_selector_bar.h"

namespace attnscope::gui {

namespace {

// The bundled model learnt Shakespeare, so it is shown text in his style: the first line is what
// the heatmap opens on, the second a second batch item.
const QString kDefaultText =
    QStringLiteral("Before we proceed any further, hear me speak.\nAll: Speak, speak.");
constexpr double kClassroomScale = 1.6;

struct ViewTab {
  render::ViewKind kind;
  const char* title;
  const char* tip;
};

const ViewTab kTabs[] = {
    {render::ViewKind::Heatmap, QT_TRANSLATE_NOOP("MainWindow", "Heatmap"),
     QT_TRANSLATE_NOOP("MainWindow", "One head: how much each query token attends to each key")},
    {render::ViewKind::Grid, QT_TRANSLATE_NOOP("MainWindow", "All heads"),
     QT_TRANSLATE_NOOP("MainWindow",
                       "Every head of every layer; click one to open it in the heatmap")},
    {render::ViewKind::Compare, QT_TRANSLATE_NOOP("MainWindow", "Compare"),
     QT_TRANSLATE_NOOP("MainWindow", "Two heads side by side and their difference")},
    {render::ViewKind::Stats, QT_TRANSLATE_NOOP("MainWindow", "Statistics"),
     QT_TRANSLATE_NOOP("MainWindow", "Entropy and focus of every head")},
    {render::ViewKind::Pipeline, QT_TRANSLATE_NOOP("MainWindow", "Pipeline"),
     QT_TRANSLATE_NOOP("MainWindow", "The tensor shapes of each step of the layer")},
};

bool isSessionPath(const QString& path) {
  return path.endsWith(QStringLiteral(".attnscope"), Qt::CaseInsensitive);
}

/// Whether a remembered model can be opened again without asking the user: not a training
/// snapshot that lived only in memory, not a file that has gone.
bool canRestore(const std::string& source, bool haveBundled) {
  if (source == "toy") return true;
  if (source == "default") return haveBundled;
  if (Document::isMemorySource(source)) return false;
  const QString s = QString::fromStdString(source);
  if (s.contains(QLatin1Char('/')) && QFileInfo::exists(s)) return true;
  return resolveCachedModel(source).has_value();
}

}  // namespace

MainWindow::MainWindow(Document* document, Settings* settings, QWidget* parent)
    : QMainWindow(parent),
      m_document(document),
      m_settings(settings),
      m_baseFont(QApplication::font()) {
  m_lastDir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  buildUi();
  buildActions();
  connectDocument();
  setAcceptDrops(true);
  resize(1400, 900);
  if (m_settings) {
    restoreGeometry(m_settings->windowGeometry());
    restoreState(m_settings->windowState());
    if (!m_settings->splitterState().isEmpty())
      m_splitter->restoreState(m_settings->splitterState());
  }
  updateTitle();
  updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildUi() {
  // Left: the text on top, the model panel below, in a vertical splitter of their own.
  m_text = new QPlainTextEdit(this);
  m_text->setPlaceholderText(tr("Type a sentence. Each non-empty line is one item of the batch."));
  m_text->setTabChangesFocus(true);
  m_text->viewport()->installEventFilter(this);  // file drops go to the window, not into the text
  m_text->setAccessibleName(tr("Input text"));
  auto* textBox = new QWidget(this);
  auto* textLayout = new QVBoxLayout(textBox);
  textLayout->setContentsMargins(0, 0, 0, 0);
  auto* textLabel = new QLabel(tr("&Text (one sentence per line):"), textBox);
  textLabel->setBuddy(m_text);
  textLayout->addWidget(textLabel);
  textLayout->addWidget(m_text);
  m_nextLabel = new QLabel(textBox);
  m_nextLabel->setObjectName(QStringLiteral("nextTokenLabel"));
  m_nextLabel->setWordWrap(true);
  m_nextLabel->setTextFormat(Qt::PlainText);
  m_nextLabel->setToolTip(tr("The model's five most likely next tokens after the first line"));
  m_nextLabel->hide();
  textLayout->addWidget(m_nextLabel);

  m_modelPanel = new ModelPanel(this);
  m_modelScroll = new QScrollArea(this);
  QScrollArea* modelScroll = m_modelScroll;
  modelScroll->setWidget(m_modelPanel);
  modelScroll->setWidgetResizable(true);
  modelScroll->setFrameShape(QFrame::NoFrame);
  modelScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  fitModelPanel();

  m_trainingPanel = new TrainingPanel(m_document, this);
  auto* trainScroll = new QScrollArea(this);
  trainScroll->setWidget(m_trainingPanel);
  trainScroll->setWidgetResizable(true);
  trainScroll->setFrameShape(QFrame::NoFrame);
  trainScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_leftTabs = new QTabWidget(this);
  m_leftTabs->setDocumentMode(true);
  m_leftTabs->addTab(modelScroll, tr("Model"));
  m_leftTabs->addTab(trainScroll, tr("Train"));
  m_leftTabs->setTabToolTip(1, tr("Train a character GPT on a text file and watch its heads form"));

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(textBox);
  left->addWidget(m_leftTabs);
  left->setStretchFactor(0, 1);
  left->setStretchFactor(1, 3);
  left->setChildrenCollapsible(false);

  // Right: banner, selectors, then the views.
  m_banner = new ErrorBanner(this);
  m_selector = new ViewSelectorBar(this);
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  for (const ViewTab& tab : kTabs) {
    render::AttentionView* view = render::createView(tab.kind, m_tabs);
    view->setObjectName(render::toString(tab.kind) + QStringLiteral("View"));
    const int index = m_tabs->addTab(view, tr(tab.title));
    m_tabs->setTabToolTip(index, tr(tab.tip));
    m_views.push_back({tab.kind, view});
  }
  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addWidget(m_banner);
  rightLayout->addWidget(m_selector);
  rightLayout->addWidget(m_tabs, 1);

  m_splitter = new QSplitter(Qt::Horizontal, this);
  m_splitter->addWidget(left);
  m_splitter->addWidget(right);
  m_splitter->setStretchFactor(0, 0);
  m_splitter->setStretchFactor(1, 1);
  m_splitter->setChildrenCollapsible(false);
  // Font-relative, so the split looks the same on high-DPI screens and in classroom mode.
  const int em = fontMetrics().horizontalAdvance(QLatin1Char('M'));
  m_splitter->setSizes({std::max(36 * em, modelScroll->minimumWidth()), 90 * em});
  auto* central = new QWidget(this);
  auto* centralLayout = new QVBoxLayout(central);
  centralLayout->addWidget(m_splitter);
  setCentralWidget(central);

  m_busyLabel = new QLabel(this);
  m_tokensLabel = new QLabel(this);
  m_deviceLabel = new QLabel(this);
  m_computeLabel = new QLabel(this);
  m_renderLabel = new QLabel(this);
  m_deviceLabel->setToolTip(tr("Where the last computation ran"));
  m_computeLabel->setToolTip(tr("Time to open the model (when it changed) and run it"));
  m_renderLabel->setToolTip(tr("Time to draw the current view"));
  statusBar()->addWidget(m_busyLabel, 1);
  for (QLabel* label : {m_tokensLabel, m_deviceLabel, m_computeLabel, m_renderLabel}) {
    statusBar()->addPermanentWidget(label);
  }
}

void MainWindow::fitModelPanel() {
  // The panel never scrolls sideways, so the left side must be at least as wide as its fields,
  // which grow with the font (classroom mode).
  m_modelScroll->setMinimumWidth(m_modelPanel->minimumSizeHint().width() +
                                 m_modelScroll->verticalScrollBar()->sizeHint().width());
}

void MainWindow::changeEvent(QEvent* event) {
  if (event->type() == QEvent::FontChange && m_modelScroll) fitModelPanel();
  QMainWindow::changeEvent(event);
}

void MainWindow::buildActions() {
  const auto action = [this](const QString& text, const QKeySequence& key, auto slot) {
    auto* a = new QAction(text, this);
    if (!key.isEmpty()) a->setShortcut(key);
    connect(a, &QAction::triggered, this, slot);
    addAction(a);  // shortcuts work in full screen, with the menu bar hidden too
    m_allActions << a;
    return a;
  };
  QStyle* s = style();

  // File
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* openSession =
      action(tr("&Open Session…"), QKeySequence::Open, [this] { openSessionDialog(); });
  openSession->setIcon(s->standardIcon(QStyle::SP_DialogOpenButton));
  file->addAction(openSession);
  m_recentMenu = file->addMenu(tr("Open &Recent"));
  QAction* saveAct = action(tr("&Save Session"), QKeySequence::Save, [this] { save(); });
  saveAct->setIcon(s->standardIcon(QStyle::SP_DialogSaveButton));
  file->addAction(saveAct);
  file->addAction(
      action(tr("Save Session &As…"), QKeySequence::SaveAs, [this] { saveSessionAs(); }));
  file->addSeparator();
  file->addAction(action(tr("Load &Text File…"), QKeySequence(tr("Ctrl+Shift+O")),
                         [this] { openTextDialog(); }));
  file->addSeparator();
  QMenu* exportMenu = file->addMenu(tr("&Export"));
  QAction* png = action(tr("View as &PNG…"), QKeySequence(tr("Ctrl+E")),
                        [this] { exportImage(render::ImageFormat::Png); });
  QAction* svg = action(tr("View as &SVG…"), QKeySequence(tr("Ctrl+Alt+S")),
                        [this] { exportImage(render::ImageFormat::Svg); });
  QAction* pdf = action(tr("View as P&DF…"), QKeySequence(tr("Ctrl+Alt+P")),
                        [this] { exportImage(render::ImageFormat::Pdf); });
  QAction* allHeads = action(tr("&All Heads to Folder…"), QKeySequence(tr("Ctrl+Shift+E")),
                             [this] { exportAllHeads(); });
  QAction* npy = action(tr("Attention as .&npy…"), QKeySequence(),
                        [this] { exportData(QStringLiteral("npy")); });
  QAction* csv = action(tr("Attention as .&csv…"), QKeySequence(),
                        [this] { exportData(QStringLiteral("csv")); });
  QAction* json = action(tr("&Trace as .json…"), QKeySequence(),
                         [this] { exportData(QStringLiteral("json")); });
  png->setIcon(s->standardIcon(QStyle::SP_DriveFDIcon));
  exportMenu->addActions({png, svg, pdf});
  exportMenu->addSeparator();
  exportMenu->addAction(allHeads);
  exportMenu->addSeparator();
  exportMenu->addActions({npy, csv, json});
  file->addSeparator();
  file->addAction(action(tr("&Quit"), QKeySequence::Quit, [this] { close(); }));

  // Edit
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* copy =
      action(tr("&Copy View Image"), QKeySequence(tr("Ctrl+Shift+C")), [this] { copyImage(); });
  copy->setIcon(s->standardIcon(QStyle::SP_FileDialogDetailedView));
  edit->addAction(copy);
  // Plain Ctrl+C copies the image only while the views have focus; in the text box it copies text.
  auto* copyInViews = new QAction(tr("Copy"), m_tabs);
  copyInViews->setShortcut(QKeySequence::Copy);
  copyInViews->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(copyInViews, &QAction::triggered, this, [this] { copyImage(); });
  m_tabs->addAction(copyInViews);
  edit->addSeparator();
  edit->addAction(
      action(tr("&Recompute Now"), QKeySequence(Qt::Key_F5), [this] { m_document->recompute(); }));

  // View
  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  viewMenu->addAction(
      action(tr("Next &Head"), QKeySequence(tr("Alt+Right")), [this] { m_document->stepHead(1); }));
  viewMenu->addAction(action(tr("Previous H&ead"), QKeySequence(tr("Alt+Left")),
                             [this] { m_document->stepHead(-1); }));
  viewMenu->addAction(action(tr("Next &Layer"), QKeySequence(tr("Alt+Down")),
                             [this] { m_document->stepLayer(1); }));
  viewMenu->addAction(action(tr("Previous La&yer"), QKeySequence(tr("Alt+Up")),
                             [this] { m_document->stepLayer(-1); }));
  viewMenu->addAction(action(tr("Next &Sentence"), QKeySequence(tr("Alt+PgDown")), [this] {
    const int batch = m_document->result() ? m_document->result()->group().batch() : 1;
    m_document->selectItem((m_document->viewState().item + 1) % std::max(1, batch));
  }));
  viewMenu->addAction(action(tr("Previous Se&ntence"), QKeySequence(tr("Alt+PgUp")), [this] {
    const int batch = std::max(1, m_document->result() ? m_document->result()->group().batch() : 1);
    m_document->selectItem((m_document->viewState().item - 1 + batch) % batch);
  }));
  viewMenu->addSeparator();
  for (int i = 0; i < m_tabs->count(); ++i) {
    viewMenu->addAction(action(m_tabs->tabText(i),
                               QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)),
                               [this, i] { m_tabs->setCurrentIndex(i); }));
  }
  viewMenu->addSeparator();
  QAction* scores = action(tr("Show S&cores"), QKeySequence(tr("Ctrl+Shift+S")), [this](bool on) {
    render::ViewState state = m_document->viewState();
    state.showScores = on;
    m_document->setViewState(state);
  });
  scores->setCheckable(true);
  viewMenu->addAction(scores);
  connect(m_document, &Document::viewStateChanged, scores,
          [scores](const render::ViewState& st) { scores->setChecked(st.showScores); });
  QAction* hideSpecial =
      action(tr("&Hide Special Tokens"), QKeySequence(tr("Ctrl+Shift+H")), [this](bool on) {
        render::ViewState state = m_document->viewState();
        state.hideSpecial = on;
        m_document->setViewState(state);
      });
  hideSpecial->setCheckable(true);
  hideSpecial->setToolTip(tr("Leave out [CLS]/[SEP]/<s>/</s> and renormalise the rows"));
  viewMenu->addAction(hideSpecial);
  connect(m_document, &Document::viewStateChanged, hideSpecial,
          [hideSpecial](const render::ViewState& st) { hideSpecial->setChecked(st.hideSpecial); });
  m_classroomAction = action(tr("Classroom &Mode"), QKeySequence(tr("Ctrl+Shift+M")),
                             [this](bool on) { setClassroomMode(on); });
  m_classroomAction->setCheckable(true);
  m_classroomAction->setToolTip(tr("Large fonts for projectors"));
  m_fullScreenAction = action(tr("&Full Screen"), QKeySequence(Qt::Key_F11), [this](bool on) {
    setWindowState(on ? (windowState() | Qt::WindowFullScreen)
                      : (windowState() & ~Qt::WindowFullScreen));
  });
  m_fullScreenAction->setCheckable(true);
  viewMenu->addAction(m_classroomAction);
  viewMenu->addAction(m_fullScreenAction);

  // Help
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(
      action(tr("&Keyboard Shortcuts"), QKeySequence(tr("Ctrl+/")), [this] { showShortcuts(); }));
  help->addAction(action(tr("&About attnscope"), QKeySequence(), [this] { showAbout(); }));

  QToolBar* toolbar = addToolBar(tr("Main"));
  toolbar->setObjectName(QStringLiteral("mainToolBar"));
  toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toolbar->addAction(openSession);
  toolbar->addAction(saveAct);
  toolbar->addSeparator();
  toolbar->addAction(png);
  for (QAction* a : {svg, pdf, allHeads}) toolbar->addAction(a);
  toolbar->addAction(copy);
  toolbar->addSeparator();
  toolbar->addAction(m_classroomAction);
  rebuildRecentMenu();
}

void MainWindow::connectDocument() {
  Document* d = m_document;
  // Text: the box edits the document; the document updates the box only when it differs, so the
  // cursor stays where the user is typing.
  connect(m_text, &QPlainTextEdit::textChanged, d,
          [this] { m_document->setText(m_text->toPlainText()); });
  connect(d, &Document::textChanged, this, [this](const QString& text) {
    if (m_text->toPlainText() != text) m_text->setPlainText(text);
    setWindowModified(true);
  });
  connect(m_modelPanel, &ModelPanel::modelSpecEdited, d, &Document::setModelSpec);
  connect(m_modelPanel, &ModelPanel::runOptionsEdited, d, &Document::setRunOptions);
  connect(d, &Document::modelSpecChanged, this, [this](const ModelSpec& spec) {
    m_modelPanel->setModelSpec(spec);
    setWindowModified(true);
  });
  connect(d, &Document::runOptionsChanged, this, [this](const RunOptions& o) {
    m_modelPanel->setRunOptions(o);
    setWindowModified(true);
  });
  connect(d, &Document::modelInfoChanged, m_modelPanel, &ModelPanel::setModelInfo);
  connect(m_trainingPanel, &TrainingPanel::runFinished, this, [this](bool cancelled) {
    statusBar()->showMessage(cancelled ? tr("Training stopped") : tr("Training finished"), 4000);
  });

  connect(m_selector, &ViewSelectorBar::viewStateEdited, d, &Document::setViewState);
  for (ViewSlot& slot : m_views) {
    connect(slot.view, &render::AttentionView::viewStateEdited, d, &Document::setViewState);
    connect(slot.view, &render::AttentionView::headActivated, this, [this](int layer, int head) {
      m_document->selectHead(layer, head);
      m_document->setCurrentView(render::ViewKind::Heatmap);  // a grid click opens that head
    });
  }
  connect(d, &Document::viewStateChanged, this, [this](const render::ViewState& state) {
    m_selector->setViewState(state);
    if (m_settings) m_settings->setPalette(state.palette);
    updateViews(false);
    updateNextTokens(m_document->result());  // says which sentence the predictions are for
  });
  connect(m_tabs, &QTabWidget::currentChanged, this, [this](int index) {
    if (index >= 0 && index < int(m_views.size())) m_document->setCurrentView(m_views[index].kind);
    updateViews(false);
  });
  connect(d, &Document::currentViewChanged, this, [this](render::ViewKind kind) {
    for (int i = 0; i < int(m_views.size()); ++i) {
      if (m_views[i].kind == kind) m_tabs->setCurrentIndex(i);
    }
  });
  connect(d, &Document::resultChanged, this, &MainWindow::onResult);
  connect(d, &Document::errorChanged, this, &MainWindow::onError);
  connect(d, &Document::busyChanged, this, &MainWindow::onBusy);

  // Show whatever the document holds already.
  m_modelPanel->setModelSpec(d->modelSpec());
  m_modelPanel->setRunOptions(d->runOptions());
  m_selector->setViewState(d->viewState());
}

void MainWindow::start(const StartOptions& options) {
  Session session;
  session.text = kDefaultText;
  const QString bundled = options.bundledModel.value_or(QString::fromStdString(defaultModelPath()));
  const bool haveBundled = !bundled.isEmpty() && QFileInfo(bundled).isFile();
  session.model.source = haveBundled ? "default" : "toy";
  bool fellBack = !haveBundled;
  if (m_settings) {
    if (std::optional<Session> last = m_settings->lastConfiguration()) {
      if (canRestore(last->model.source, haveBundled)) {
        session = *last;
        fellBack = false;
      } else {
        statusBar()->showMessage(tr("The last model (%1) is not available any more")
                                     .arg(QString::fromStdString(last->model.source)),
                                 8000);
      }
    }
    session.view.palette = m_settings->palette();
    session.view.classroom = m_settings->classroomMode();
  }
  if (!options.sessionPath.isEmpty() || options.model) fellBack = false;
  QString error;
  if (!options.sessionPath.isEmpty()) {
    error = SessionFile::load(options.sessionPath, &session);
    if (error.isEmpty()) {
      m_sessionPath = QFileInfo(options.sessionPath).absoluteFilePath();
      if (m_settings) m_settings->addRecentSession(m_sessionPath);
    }
  }
  if (options.text) session.text = *options.text;
  if (options.model) session.model.source = options.model->toStdString();
  if (m_settings && m_settings->classroomMode()) session.view.classroom = true;
  m_document->loadSession(session);
  setClassroomMode(session.view.classroom);
  rebuildRecentMenu();
  if (!error.isEmpty()) {
    showActionError(tr("Could not open the session"), error);
  } else if (fellBack) {
    m_banner->showMessage(
        tr("The bundled model (resources/models/tiny-shakespeare.safetensors) was not found, so "
           "the toy layer is shown. Set ATTNSCOPE_DEFAULT_MODEL to a trained checkpoint, or train "
           "one in the Train tab."),
        ErrorBanner::Level::Notice);
    m_bannerFromDocument = false;
  }
  setWindowModified(false);
  updateTitle();
  m_text->setFocus();
  m_text->moveCursor(QTextCursor::End);
}

render::AttentionView* MainWindow::currentView() const {
  return qobject_cast<render::AttentionView*>(m_tabs->currentWidget());
}

render::AttentionView* MainWindow::view(render::ViewKind kind) const {
  for (const ViewSlot& slot : m_views) {
    if (slot.kind == kind) return slot.view;
  }
  return nullptr;
}

QString MainWindow::bannerMessage() const {
  return m_banner->isHidden() ? QString() : m_banner->message();
}

QString MainWindow::nextTokenText() const {
  return m_nextLabel->isHidden() ? QString() : m_nextLabel->text();
}

void MainWindow::syncSlot(ViewSlot& slot) {
  if (slot.stateStale) {
    slot.view->setViewState(m_document->viewState());
    slot.stateStale = false;
  }
  if (slot.resultStale) {
    slot.view->setResult(m_document->result());
    slot.resultStale = false;
  }
}

void MainWindow::updateViews(bool resultChanged) {
  const int current = m_tabs->currentIndex();
  for (int i = 0; i < int(m_views.size()); ++i) {
    ViewSlot& slot = m_views[i];
    slot.stateStale = true;
    if (resultChanged) slot.resultStale = true;
    // Hidden views wait until their tab is shown: drawing five views per keystroke is waste.
    if (i == current) syncSlot(slot);
  }
}

void MainWindow::onResult(const render::ResultPtr& result) {
  m_selector->setResult(result, m_document->resultTexts());
  QElapsedTimer timer;
  timer.start();
  updateViews(true);
  if (render::AttentionView* v = currentView(); v && v->isVisible()) v->repaint();
  m_renderMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;

  updateNextTokens(result);
  QStringList notices;
  if (result) {
    for (const std::string& n : result->notices) notices << QString::fromStdString(n);
  }
  notices << m_document->workerNotices();
  if (!notices.isEmpty() && m_document->error().isEmpty()) {
    m_banner->showMessage(notices.join(QLatin1Char('\n')), ErrorBanner::Level::Notice);
    m_bannerFromDocument = true;
  } else if (m_bannerFromDocument && m_document->error().isEmpty()) {
    m_banner->clearMessage();
  }
  updateStatus();
}

namespace {

QString percentText(float probability) {
  if (!std::isfinite(probability)) return QStringLiteral("n/a");
  const double percent = 100.0 * probability;
  return percent < 0.5 ? QStringLiteral("<1%") : QStringLiteral("%1%").arg(percent, 0, 'f', 0);
}

QString candidatesText(const std::vector<Prediction>& predictions) {
  QStringList candidates;
  for (const Prediction& p : predictions)
    candidates << QString::fromStdString(p.token.label) + QLatin1Char(' ') +
                      percentText(p.probability);
  return candidates.join(QStringLiteral(" · "));
}

}  // namespace

void MainWindow::updateNextTokens(const render::ResultPtr& result) {
  // Predictions are for batch item 0: say so when another sentence is shown.
  const int item = m_document->viewState().item;
  const QString suffix = item != 0 ? tr("  (for sentence 0)") : QString();
  if (result && !result->maskFills.empty()) {
    QStringList lines;
    for (const MaskFill& fill : result->maskFills) {
      lines << tr("Mask at token %1: %2").arg(fill.position).arg(candidatesText(fill.predictions));
    }
    m_nextLabel->setText(lines.join(QLatin1Char('\n')) + suffix);
    m_nextLabel->show();
    return;
  }
  if (!result || result->nextToken.empty()) {
    m_nextLabel->hide();
    return;
  }
  m_nextLabel->setText(tr("Next: %1").arg(candidatesText(result->nextToken)) + suffix);
  m_nextLabel->show();
}

void MainWindow::onError(const QString& message) {
  if (message.isEmpty()) {
    if (m_bannerFromDocument) m_banner->clearMessage();
    m_bannerFromDocument = false;
    return;
  }
  m_banner->showMessage(message);
  m_bannerFromDocument = true;
}

void MainWindow::onBusy(bool busy) { m_busyLabel->setText(busy ? tr("Computing…") : QString()); }

void MainWindow::updateStatus() {
  const render::ResultPtr& r = m_document->result();
  if (!r) {
    m_tokensLabel->setText(tr("No result yet"));
    m_deviceLabel->clear();
    m_computeLabel->clear();
    m_renderLabel->clear();
    return;
  }
  int tokens = 0;
  for (int n : r->group().queryLengths) tokens += n;
  m_tokensLabel->setText(
      (tokens == 1 ? tr("1 token") : tr("%1 tokens").arg(tokens)) + QStringLiteral(" · ") +
      (r->group().batch() == 1 ? tr("1 sentence") : tr("%1 sentences").arg(r->group().batch())));
  m_deviceLabel->setText(tr("Device: %1").arg(QString::fromStdString(r->device)));
  m_computeLabel->setText(tr("Compute %1 ms").arg(m_document->computeMs(), 0, 'f', 1));
  m_renderLabel->setText(tr("Render %1 ms").arg(m_renderMs, 0, 'f', 1));
}

void MainWindow::updateTitle() {
  const QString name =
      m_sessionPath.isEmpty() ? tr("Untitled") : QFileInfo(m_sessionPath).fileName();
  setWindowTitle(QStringLiteral("%1[*] — attnscope").arg(name));
}

void MainWindow::showActionError(const QString& what, const QString& reason) {
  m_banner->showMessage(QStringLiteral("%1: %2").arg(what, reason));
  m_bannerFromDocument = false;
  statusBar()->showMessage(what, 5000);
}

// --- sessions ---------------------------------------------------------------------------------

bool MainWindow::openSession(const QString& path) {
  Session session;
  const QString error = SessionFile::load(path, &session);
  if (!error.isEmpty()) {
    showActionError(tr("Could not open the session"), error);
    return false;
  }
  m_document->loadSession(session);
  setClassroomMode(session.view.classroom);
  rememberSessionPath(path);
  statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(path).fileName()), 4000);
  return true;
}

bool MainWindow::saveSession(const QString& path) {
  const QString error = SessionFile::save(path, m_document->session());
  if (!error.isEmpty()) {
    showActionError(tr("Could not save the session"), error);
    return false;
  }
  rememberSessionPath(path);
  statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), 4000);
  return true;
}

void MainWindow::rememberSessionPath(const QString& path) {
  m_sessionPath = QFileInfo(path).absoluteFilePath();
  m_lastDir = QFileInfo(path).absolutePath();
  if (m_settings) m_settings->addRecentSession(m_sessionPath);
  rebuildRecentMenu();
  setWindowModified(false);
  updateTitle();
}

void MainWindow::openSessionDialog() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open Session"), m_lastDir, tr("attnscope sessions (*.attnscope);;All files (*)"));
  if (!path.isEmpty()) openSession(path);
}

bool MainWindow::saveSessionAs() {
  const QString suggested =
      m_sessionPath.isEmpty() ? QDir(m_lastDir).filePath(tr("untitled.attnscope")) : m_sessionPath;
  QString path = QFileDialog::getSaveFileName(this, tr("Save Session"), suggested,
                                              tr("attnscope sessions (*.attnscope)"));
  if (path.isEmpty()) return false;
  if (!isSessionPath(path)) path += QStringLiteral(".attnscope");
  return saveSession(path);
}

void MainWindow::save() {
  if (m_sessionPath.isEmpty())
    saveSessionAs();
  else
    saveSession(m_sessionPath);
}

void MainWindow::rebuildRecentMenu() {
  m_recentMenu->clear();
  const QStringList recent = m_settings ? m_settings->recentSessions() : QStringList();
  for (int i = 0; i < recent.size(); ++i) {
    const QString path = recent[i];
    QAction* a = m_recentMenu->addAction(
        QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()));
    a->setToolTip(path);
    a->setStatusTip(path);
    connect(a, &QAction::triggered, this, [this, path] {
      if (!openSession(path) && m_settings && !QFileInfo::exists(path)) {
        m_settings->removeRecentSession(path);
        rebuildRecentMenu();
      }
    });
  }
  if (!recent.isEmpty()) {
    m_recentMenu->addSeparator();
    m_recentMenu->addAction(tr("Clear Recent Sessions"), this, [this] {
      if (m_settings) m_settings->clearRecentSessions();
      rebuildRecentMenu();
    });
  }
  m_recentMenu->setEnabled(!recent.isEmpty());
}

// --- text files and drops ---------------------------------------------------------------------

bool MainWindow::loadTextFile(const QString& path) {
  QString text;
  const QString error = TextFileLoader::load(path, &text);
  if (!error.isEmpty()) {
    showActionError(tr("Could not load the text"), error);
    return false;
  }
  m_document->setText(text);
  statusBar()->showMessage(tr("Loaded %1").arg(QFileInfo(path).fileName()), 4000);
  return true;
}

void MainWindow::openTextDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load Text File"), m_lastDir,
                                                    tr("Text files (*.txt);;All files (*)"));
  if (!path.isEmpty()) loadTextFile(path);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (urls.isEmpty()) return;
  event->acceptProposedAction();
  const QUrl& url = urls.first();
  if (!url.isLocalFile()) {
    showActionError(tr("Could not load the drop"), tr("only local files can be dropped"));
    return;
  }
  const QString path = url.toLocalFile();
  if (isSessionPath(path))
    openSession(path);
  else
    loadTextFile(path);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  // QPlainTextEdit would insert a dropped file's URL as text; a file drop means "load this file".
  if (watched == m_text->viewport()) {
    if (event->type() == QEvent::DragEnter) {
      auto* e = static_cast<QDragEnterEvent*>(event);
      if (e->mimeData()->hasUrls()) {
        e->acceptProposedAction();
        return true;
      }
    } else if (event->type() == QEvent::DragMove) {
      auto* e = static_cast<QDragMoveEvent*>(event);
      if (e->mimeData()->hasUrls()) {
        e->acceptProposedAction();
        return true;
      }
    } else if (event->type() == QEvent::Drop) {
      auto* e = static_cast<QDropEvent*>(event);
      if (e->mimeData()->hasUrls()) {
        dropEvent(e);
        return true;
      }
    }
  }
  return QMainWindow::eventFilter(watched, event);
}

// --- exports ----------------------------------------------------------------------------------

QString MainWindow::defaultTitle() const {
  const render::ViewState& s = m_document->viewState();
  const QString model =
      m_document->modelInfo() ? QString::fromStdString(m_document->modelInfo()->name) : QString();
  QString title = tr("%1 — layer %2, head %3")
                      .arg(m_tabs->tabText(m_tabs->currentIndex()))
                      .arg(s.layer)
                      .arg(s.head);
  if (!model.isEmpty()) title += QStringLiteral(" — ") + model;
  const render::ViewKind kind = currentView() ? currentView()->kind() : render::ViewKind::Heatmap;
  const bool matrixView = kind == render::ViewKind::Heatmap || kind == render::ViewKind::Grid ||
                          kind == render::ViewKind::Compare;
  if (s.hideSpecial && matrixView && m_document->result() &&
      render::hasSpecialTokens(m_document->result()->group(s.group), s.item)) {
    title += QStringLiteral(" — ") + render::hiddenSpecialNote(s.showScores);
  }
  return title;
}

QString MainWindow::defaultExportName(const QString& extension) const {
  const render::ViewState& s = m_document->viewState();
  const render::AttentionView* v = currentView();
  const QString kind = v ? render::toString(v->kind()) : QStringLiteral("view");
  return QDir(m_lastDir).filePath(
      QStringLiteral("attnscope-%1-L%2-H%3.%4").arg(kind).arg(s.layer).arg(s.head).arg(extension));
}

render::ExportOptions MainWindow::defaultExportOptions(render::ImageFormat format) const {
  render::ExportOptions o;
  o.format = format;
  o.title = defaultTitle();
  return o;
}

void MainWindow::reportExport(const QString& error, const QString& done) {
  if (!error.isEmpty())
    showActionError(tr("Export failed"), error);
  else
    statusBar()->showMessage(done, 4000);
}

void MainWindow::exportImage(render::ImageFormat format) {
  render::AttentionView* v = currentView();
  if (!v || !m_document->result()) {
    showActionError(tr("Nothing to export"), tr("there is no result yet"));
    return;
  }
  std::optional<render::ExportOptions> options =
      ExportDialog::ask(this, format, defaultExportOptions(format));
  if (!options) return;
  const QString extension = format == render::ImageFormat::Png   ? QStringLiteral("png")
                            : format == render::ImageFormat::Svg ? QStringLiteral("svg")
                                                                 : QStringLiteral("pdf");
  QString path =
      QFileDialog::getSaveFileName(this, tr("Export View"), defaultExportName(extension),
                                   tr("%1 files (*.%2)").arg(extension.toUpper(), extension));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + extension;
  m_lastDir = QFileInfo(path).absolutePath();
  const QString error = render::Exporter::exportView(*v, path, *options);
  reportExport(error, tr("Exported %1").arg(QFileInfo(path).fileName()));
}

void MainWindow::copyImage() {
  render::AttentionView* v = currentView();
  if (!v || !m_document->result()) {
    showActionError(tr("Nothing to copy"), tr("there is no result yet"));
    return;
  }
  render::ExportOptions o = defaultExportOptions(render::ImageFormat::Png);
  o.width = std::max(400, v->width());
  o.height = std::max(300, v->height());
  o.dpi = static_cast<int>(96 * v->devicePixelRatioF());
  const QImage image = render::Exporter::renderImage(*v, o);
  if (image.isNull()) {
    showActionError(tr("Copy failed"), tr("the view could not be drawn"));
    return;
  }
  QGuiApplication::clipboard()->setImage(image);
  statusBar()->showMessage(tr("Copied the view to the clipboard"), 3000);
}

void MainWindow::exportAllHeads() {
  if (!m_document->result()) {
    showActionError(tr("Nothing to export"), tr("there is no result yet"));
    return;
  }
  std::optional<render::ExportOptions> options = ExportDialog::ask(
      this, render::ImageFormat::Png, defaultExportOptions(render::ImageFormat::Png));
  if (!options) return;
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Export All Heads to Folder"), m_lastDir);
  if (dir.isEmpty()) return;
  m_lastDir = dir;
  const QString error = render::Exporter::exportAllHeads(m_document->result(),
                                                         m_document->viewState(), dir, *options);
  reportExport(error, tr("Exported every head to %1").arg(dir));
}

void MainWindow::exportData(const QString& kind) {
  const render::ResultPtr result = m_document->result();
  if (!result) {
    showActionError(tr("Nothing to export"), tr("there is no result yet"));
    return;
  }
  const QString stem = kind == QStringLiteral("json") ? QStringLiteral("attnscope-trace")
                                                      : QStringLiteral("attnscope-attention");
  QString path = QFileDialog::getSaveFileName(
      this, tr("Export Data"), QDir(m_lastDir).filePath(stem + QLatin1Char('.') + kind),
      tr("%1 files (*.%2)").arg(kind.toUpper(), kind));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + kind;
  m_lastDir = QFileInfo(path).absolutePath();
  QString error;
  if (kind == QStringLiteral("npy"))
    error = render::Exporter::exportAttentionNpy(*result, path);
  else if (kind == QStringLiteral("csv"))
    error = render::Exporter::exportAttentionCsv(*result, path);
  else
    error = render::Exporter::exportTraceJson(*result, path);
  reportExport(error, tr("Exported %1").arg(QFileInfo(path).fileName()));
}

// --- preferences and help ---------------------------------------------------------------------

void MainWindow::setClassroomMode(bool on) {
  QFont font = m_baseFont;
  if (on) {
    if (font.pointSizeF() > 0)
      font.setPointSizeF(font.pointSizeF() * kClassroomScale);
    else
      font.setPixelSize(static_cast<int>(font.pixelSize() * kClassroomScale));
  }
  QApplication::setFont(font);
  {
    const QSignalBlocker blocker(m_classroomAction);
    m_classroomAction->setChecked(on);
  }
  render::ViewState state = m_document->viewState();
  state.classroom = on;
  m_document->setViewState(state);
  if (m_settings) m_settings->setClassroomMode(on);
}

void MainWindow::showShortcuts() {
  ShortcutsDialog dialog(m_allActions, this);
  dialog.exec();
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About attnscope"),
      tr("<h3>attnscope %1</h3><p>See what every attention head of a transformer does "
         "with the text you type.</p><p>Licensed under the GPL, version 3 or later.</p>")
          .arg(QApplication::applicationVersion()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_settings) {
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_settings->setSplitterState(m_splitter->saveState());
    m_settings->setLastConfiguration(m_document->session());
    m_settings->sync();
  }
  event->accept();
}

}  // namespace attnscope::gui
