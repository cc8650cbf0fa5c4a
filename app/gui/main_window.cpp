// SPDX-License-Identifier: GPL-3.0-or-later
#include "main_window.h"

#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QInputDialog>
#include <QLabel>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <cmath>

#include "ablation_view.h"
#include "attnscope/model_catalog.h"
#include "attnscope/tiny_gpt.h"
#include "compare_view.h"
#include "compute_worker.h"
#include "document.h"
#include "download_dialog.h"
#include "error_banner.h"
#include "generate_bar.h"
#include "main_menus.h"
#include "model_panel.h"
#include "probabilities_panel.h"
#include "session_actions.h"
#include "settings.h"
#include "status_panel.h"
#include "step_view.h"
#include "text_file_loader.h"
#include "theme.h"
#include "training_panel.h"
#include "view_selector_bar.h"
#include "view_tabs.h"

namespace attnscope::gui {

namespace {

constexpr double kClassroomScale = 1.6;

}  // namespace

MainWindow::MainWindow(Document* document, Settings* settings, QWidget* parent)
    : QMainWindow(parent),
      m_document(document),
      m_settings(settings),
      m_baseFont(QApplication::font()) {
  m_folder.path = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  buildUi();
  m_menus = new MainMenus(this, m_document, m_tabs, m_exports, m_sessions);
  connect(m_menus, &MainMenus::textFileRequested, this, &MainWindow::openTextDialog);
  connect(m_menus, &MainMenus::modelFileRequested, m_modelPanel, &ModelPanel::openModelFileDialog);
  connect(m_menus, &MainMenus::modelFolderRequested, m_modelPanel,
          &ModelPanel::openModelFolderDialog);
  // File › Download Model…: once in the cache, the model joins the selector and opens.
  connect(m_menus, &MainMenus::downloadModelRequested, this, [this] {
    auto* dialog = new DownloadDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &DownloadDialog::modelDownloaded, m_modelPanel, &ModelPanel::chooseSource);
    dialog->open();
  });
  connect(m_menus, &MainMenus::memoryLimitRequested, this, &MainWindow::chooseMemoryLimit);
  connect(m_menus, &MainMenus::classroomModeToggled, this, &MainWindow::setClassroomMode);
  connect(m_menus, &MainMenus::themeChosen, this, &MainWindow::setTheme);
  connectDocument();
  setAcceptDrops(true);
  // 1400×900 where the screen allows, else most of it (a 1024×700 laptop gets the whole window).
  QSize size(1400, 900);
  if (const QScreen* screen = QGuiApplication::primaryScreen()) {
    const QSize available = screen->availableGeometry().size();
    size = size.boundedTo(QSize(available.width() * 95 / 100, available.height() * 95 / 100));
  }
  resize(size);
  if (m_settings) {
    restoreGeometry(m_settings->windowGeometry());
    restoreState(m_settings->windowState());
    if (!m_settings->splitterState().isEmpty())
      m_splitter->restoreState(m_settings->splitterState());
    m_document->setMemoryLimitBytes(uint64_t(m_settings->memoryLimitMiB()) * 1024 * 1024);
  }
  updateTitle();
}

void MainWindow::chooseMemoryLimit() {
  const MemoryEstimate& e = m_document->memoryEstimate();
  const int current = static_cast<int>(m_document->memoryLimitBytes() / (1024 * 1024));
  QString label =
      tr("Runs and model loading estimate their memory before allocating and refuse "
         "above this limit. When every layer's attention does not fit, each layer keeps "
         "its queries and keys instead and the views recompute the weights they show; "
         "when even that does not fit, only the layers on screen and their neighbours are "
         "kept.\n\n");
  label += e.total > 0 ? tr("The last run needed about %1 (weights %2, attention %3).")
                             .arg(ComputeWorker::formatBytes(e.total),
                                  ComputeWorker::formatBytes(e.weights),
                                  ComputeWorker::formatBytes(e.attention + e.scores))
                       : tr("No estimate yet: run a model first.");
  label += tr("\n\nMemory limit in MiB:");
  bool ok = false;
  const int mib =
      QInputDialog::getInt(this, tr("Memory Limit"), label, current, Settings::kMinMemoryLimitMiB,
                           Settings::kMaxMemoryLimitMiB, 256, &ok);
  if (!ok) return;
  if (m_settings) m_settings->setMemoryLimitMiB(mib);
  m_document->setMemoryLimitBytes(uint64_t(mib) * 1024 * 1024);
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
  m_generateBar = new GenerateBar(m_document, textBox);
  m_generateBar->hide();  // until a model that can generate has opened
  textLayout->addWidget(m_generateBar);
  m_probabilities = new ProbabilitiesPanel(m_document, this);
  m_probabilities->hide();

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
  left->addWidget(m_probabilities);
  left->addWidget(m_leftTabs);
  left->setStretchFactor(0, 1);
  left->setStretchFactor(1, 1);
  left->setStretchFactor(2, 3);
  left->setChildrenCollapsible(false);

  // Right: banner, selectors, then the views.
  m_banner = new ErrorBanner(this);
  m_selector = new ViewSelectorBar(this);
  m_tabs = new ViewTabs(this);
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

  m_status = new StatusPanel(statusBar());
  m_exports = new ExportActions(m_document, m_tabs, &m_folder, this);
  m_sessions = new SessionActions(m_document, m_settings, &m_folder, this);
}

void MainWindow::fitModelPanel() {
  // The panel never scrolls sideways, so the left side must be at least as wide as its fields,
  // which grow with the font (classroom mode).
  m_modelScroll->setMinimumWidth(m_modelPanel->minimumSizeHint().width() +
                                 m_modelScroll->verticalScrollBar()->sizeHint().width());
}

void MainWindow::setTheme(Theme theme) {
  applyTheme(theme);
  m_menus->showTheme(theme);
  if (m_settings) m_settings->setTheme(toString(theme));
  // Redraw once the new palette has reached every widget (its events are still queued), and
  // without running the event loop here: start() calls this.
  QTimer::singleShot(0, m_tabs, [tabs = m_tabs] { tabs->refresh(); });
}

void MainWindow::changeEvent(QEvent* event) {
  if (event->type() == QEvent::FontChange && m_modelScroll) fitModelPanel();
  // The views draw with the palette: a new theme redraws them.
  if ((event->type() == QEvent::PaletteChange ||
       event->type() == QEvent::ApplicationPaletteChange) &&
      m_tabs)
    m_tabs->refresh();
  QMainWindow::changeEvent(event);
}

void MainWindow::connectCompare() {
  // The Compare view's "B from another model": the document runs it on the same text.
  auto* compare = qobject_cast<render::CompareView*>(m_tabs->view(render::ViewKind::Compare));
  if (!compare) return;
  connect(m_document, &Document::compareResultChanged, compare,
          &render::CompareView::setOtherResult);
  connect(compare, &render::CompareView::otherModelCleared, this, [this, compare] {
    m_document->setCompareModel(std::nullopt);
    compare->setOtherModelName(QString());
  });
  connect(compare, &render::CompareView::otherModelRequested, this, [this, compare](bool folder) {
    const QString path =
        folder ? QFileDialog::getExistingDirectory(this, tr("Model folder for head B"))
               : QFileDialog::getOpenFileName(
                     this, tr("Model file for head B"), QString(),
                     tr("Model files (*.gguf *.safetensors *.bin);;All files (*)"));
    if (path.isEmpty()) return;
    ModelSpec spec;
    spec.source = path.toStdString();
    m_document->setCompareModel(spec);
    compare->setOtherModelName(QFileInfo(path).fileName());
  });
}

void MainWindow::connectGeneration() {
  Document* d = m_document;
  GenerationController* g = d->generator();
  connect(d, &Document::modelInfoChanged, this, [this] {
    const bool can = m_document->canGenerate();
    m_generateBar->setVisible(can);
    m_probabilities->setVisible(can && m_document->generator()->stepCount() > 0);
  });
  auto* step = qobject_cast<render::StepView*>(m_tabs->view(render::ViewKind::Step));
  const auto show = [this, step, g] {
    if (step) step->setFrame(g->frame());
    m_probabilities->setVisible(m_document->canGenerate() && g->stepCount() > 0);
  };
  connect(g, &GenerationController::selectedStepChanged, this, show);
  connect(g, &GenerationController::stepsChanged, this, [this, g, show] {
    // The first token of a generation brings its view forward.
    if (g->stepCount() == 1) m_document->setCurrentView(render::ViewKind::Step);
    show();
  });
}

void MainWindow::connectDocument() {
  Document* d = m_document;
  // Text: the box edits the document; the document updates the box only when it differs, so the
  // cursor stays where the user is typing.
  connect(m_text, &QPlainTextEdit::textChanged, d,
          [this] { m_document->setText(m_text->toPlainText()); });
  connect(d, &Document::textChanged, this, [this](const QString& text) {
    if (m_text->toPlainText() != text) m_text->setPlainText(text);
  });
  connect(m_modelPanel, &ModelPanel::modelSpecEdited, d, &Document::setModelSpec);
  connect(m_modelPanel, &ModelPanel::runOptionsEdited, d, &Document::setRunOptions);
  connect(d, &Document::modelSpecChanged, m_modelPanel, &ModelPanel::setModelSpec);
  connect(d, &Document::runOptionsChanged, m_modelPanel, &ModelPanel::setRunOptions);
  connect(d, &Document::modifiedChanged, this, &QWidget::setWindowModified);
  connect(d, &Document::sessionPathChanged, this, [this] { updateTitle(); });
  connect(d, &Document::modelInfoChanged, m_modelPanel, &ModelPanel::setModelInfo);
  connect(m_trainingPanel, &TrainingPanel::runFinished, this, [this](bool cancelled) {
    statusBar()->showMessage(cancelled ? tr("Training stopped") : tr("Training finished"), 4000);
  });

  connect(m_selector, &ViewSelectorBar::viewStateEdited, d, &Document::setViewState);
  connect(m_tabs, &ViewTabs::viewStateEdited, d, &Document::setViewState);
  connect(m_tabs, &ViewTabs::headActivated, this, [this](int layer, int head) {
    m_document->selectHead(layer, head);
    m_document->setCurrentView(render::ViewKind::Heatmap);  // a grid click opens that head
  });
  connect(d, &Document::viewStateChanged, this, [this](const render::ViewState& state) {
    m_selector->setViewState(state);
    if (m_settings) m_settings->setPalette(state.palette);
    m_tabs->setViewState(state);
    updateNextTokens(m_document->result());  // says which sentence the predictions are for
  });
  connect(m_tabs, &ViewTabs::currentKindChanged, d, &Document::setCurrentView);
  if (auto* ablation =
          qobject_cast<render::AblationView*>(m_tabs->view(render::ViewKind::Ablation))) {
    connect(ablation, &render::AblationView::ablationRequested, d, &Document::runAblation);
    connect(ablation, &render::AblationView::ablationCancelRequested, d, &Document::cancelAblation);
    connect(d, &Document::ablationChanged, ablation, &render::AblationView::setAblation);
    ablation->setAblation(d->ablation());
  }
  connect(d, &Document::currentViewChanged, m_tabs, &ViewTabs::showKind);
  connectGeneration();
  connectCompare();
  connect(d, &Document::resultChanged, this, &MainWindow::onResult);
  connect(d, &Document::errorChanged, this, &MainWindow::onError);
  connect(d, &Document::busyChanged, m_status, &StatusPanel::setBusy);
  connect(d, &Document::computeProgress, m_status, &StatusPanel::setProgress);
  connect(d, &Document::memoryEstimateChanged, this, [this] {
    m_status->showMemory(m_document->memoryEstimate(), m_document->memoryLimitBytes());
  });
  connect(m_exports, &ExportActions::failed, this, &MainWindow::showActionError);
  connect(m_exports, &ExportActions::finished, this, &MainWindow::showMessage);
  connect(m_sessions, &SessionActions::failed, this, &MainWindow::showActionError);
  connect(m_sessions, &SessionActions::finished, this, &MainWindow::showMessage);
  connect(m_sessions, &SessionActions::opened, this,
          [this](const Session& session) { setClassroomMode(session.view.classroom); });

  // Show whatever the document holds already.
  m_modelPanel->setModelSpec(d->modelSpec());
  m_modelPanel->setRunOptions(d->runOptions());
  m_selector->setViewState(d->viewState());
  m_tabs->setViewState(d->viewState());
}

void MainWindow::start(const StartOptions& options) {
  const QString bundled = options.bundledModel.value_or(QString::fromStdString(defaultModelPath()));
  const bool haveBundled = !bundled.isEmpty() && QFileInfo(bundled).isFile();
  std::optional<RememberedState> remembered;
  if (m_settings) {
    remembered = RememberedState{m_settings->lastConfiguration(), m_settings->palette(),
                                 m_settings->classroomMode()};
  }
  const StartPlan plan = initialSession(options, remembered, haveBundled, canRestoreSource);
  if (!plan.statusMessage.isEmpty()) statusBar()->showMessage(plan.statusMessage, 8000);
  m_document->loadSession(plan.session);
  if (!plan.sessionPath.isEmpty()) m_sessions->remember(plan.sessionPath);
  setClassroomMode(plan.session.view.classroom);
  setTheme(m_settings ? parseTheme(m_settings->theme()) : Theme::System);
  if (!plan.error.isEmpty()) {
    showActionError(tr("Could not open the session"), plan.error);
  } else if (plan.bundledMissing) {
    m_banner->showMessage(
        tr("The bundled model (resources/models/tiny-shakespeare.safetensors) was not found, so "
           "the toy layer is shown. Set ATTNSCOPE_DEFAULT_MODEL to a trained checkpoint, or train "
           "one in the Train tab."),
        ErrorBanner::Level::Notice);
    m_bannerFromDocument = false;
  }
  m_document->setModified(false);
  updateTitle();
  m_text->setFocus();
  m_text->moveCursor(QTextCursor::End);
}

render::AttentionView* MainWindow::currentView() const { return m_tabs->currentView(); }

render::AttentionView* MainWindow::view(render::ViewKind kind) const { return m_tabs->view(kind); }

QString MainWindow::bannerMessage() const {
  return m_banner->isHidden() ? QString() : m_banner->message();
}

QString MainWindow::nextTokenText() const {
  return m_nextLabel->isHidden() ? QString() : m_nextLabel->text();
}

void MainWindow::onResult(const render::ResultPtr& result) {
  m_selector->setResult(result, m_document->resultTexts());
  m_tabs->setResult(result);

  updateNextTokens(result);
  // The worker's first: the banner shows one line, and the layers kept (memory limit) decide what
  // the views can show.
  QStringList notices = m_document->workerNotices();
  if (result) {
    for (const std::string& n : result->notices) notices << QString::fromStdString(n);
  }
  if (!notices.isEmpty() && m_document->error().isEmpty()) {
    m_banner->showMessage(notices.join(QLatin1Char('\n')), ErrorBanner::Level::Notice);
    m_bannerFromDocument = true;
  } else if (m_bannerFromDocument && m_document->error().isEmpty()) {
    m_banner->clearMessage();
  }
  m_status->showResult(result, m_document->computeMs(), m_tabs->lastRenderMs());
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
  const int item = m_document->viewState().item;
  if (result && !result->maskFills.empty()) {
    // Mask fills are computed for batch item 0: say so when another sentence is shown.
    QStringList lines;
    for (const MaskFill& fill : result->maskFills) {
      lines << tr("Mask at token %1: %2").arg(fill.position).arg(candidatesText(fill.predictions));
    }
    m_nextLabel->setText(lines.join(QLatin1Char('\n')) +
                         (item != 0 ? tr("  (for sentence 0)") : QString()));
    m_nextLabel->show();
    return;
  }
  // The sentence on screen; results without per-item candidates have those of item 0 only.
  const bool perItem = result && item >= 0 && item < static_cast<int>(result->nextTokens.size());
  const std::vector<Prediction>* next = perItem
                                            ? &result->nextTokens[static_cast<std::size_t>(item)]
                                            : (result ? &result->nextToken : nullptr);
  if (!next || next->empty()) {
    m_nextLabel->hide();
    return;
  }
  const QString suffix = !perItem && item != 0 ? tr("  (for sentence 0)") : QString();
  m_nextLabel->setText(tr("Next: %1").arg(candidatesText(*next)) + suffix);
  m_nextLabel->setToolTip(
      tr("The model's five most likely next tokens after sentence %1").arg(perItem ? item : 0));
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

void MainWindow::updateTitle() {
  const QString path = m_document->sessionPath();
  const QString name = path.isEmpty() ? tr("Untitled") : QFileInfo(path).fileName();
  setWindowTitle(QStringLiteral("%1[*] — attnscope").arg(name));
}

void MainWindow::showActionError(const QString& what, const QString& reason) {
  m_banner->showMessage(QStringLiteral("%1: %2").arg(what, reason));
  m_bannerFromDocument = false;
  statusBar()->showMessage(what, 5000);
}

void MainWindow::showMessage(const QString& message) { statusBar()->showMessage(message, 4000); }

// --- sessions ---------------------------------------------------------------------------------

bool MainWindow::openSession(const QString& path) { return m_sessions->open(path); }

bool MainWindow::saveSession(const QString& path) { return m_sessions->save(path); }

// --- text files and drops ---------------------------------------------------------------------

bool MainWindow::loadTextFile(const QString& path) {
  QString text;
  const QString error = TextFileLoader::load(path, &text);
  if (!error.isEmpty()) {
    showActionError(tr("Could not load the text"), error);
    return false;
  }
  m_document->setText(text);
  showMessage(tr("Loaded %1").arg(QFileInfo(path).fileName()));
  return true;
}

void MainWindow::openTextDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load Text File"), m_folder.path,
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
  if (SessionActions::isSessionPath(path))
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

QString MainWindow::defaultTitle() const { return m_exports->defaultTitle(); }

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
  m_menus->showClassroomMode(on);
  render::ViewState state = m_document->viewState();
  state.classroom = on;
  m_document->setViewState(state);
  if (m_settings) m_settings->setClassroomMode(on);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (m_settings) {
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_settings->setSplitterState(m_splitter->saveState());
    // A configuration that failed to compute (a huge toy layer, a model that is gone) is not
    // remembered, or every later start would try it again: the last one that worked stays.
    if (m_document->error().isEmpty() && m_document->result())
      m_settings->setLastConfiguration(m_document->session());
    m_settings->sync();
  }
  event->accept();
}

}  // namespace attnscope::gui
