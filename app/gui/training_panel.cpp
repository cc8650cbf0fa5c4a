// SPDX-License-Identifier: GPL-3.0-or-later
#include "training_panel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <thread>

#include "attnscope/error.h"
#include "document.h"
#include "error_banner.h"
#include "loss_plot.h"
#include "text_file_loader.h"

namespace attnscope::gui {

namespace {

// Shakespeare is 1.1 MB; anything much larger trains for hours on a CPU anyway.
constexpr qint64 kMaxCorpusBytes = 64ll * 1024 * 1024;

QSpinBox* spinBox(int lo, int hi, int value, const QString& tip, QWidget* parent) {
  auto* box = new QSpinBox(parent);
  box->setRange(lo, hi);
  box->setValue(value);
  box->setToolTip(tip);
  box->setKeyboardTracking(false);
  return box;
}

QString duration(double seconds) {
  const int s = static_cast<int>(std::lround(std::max(0.0, seconds)));
  return s >= 3600 ? QStringLiteral("%1:%2:%3")
                         .arg(s / 3600)
                         .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
                         .arg(s % 60, 2, 10, QLatin1Char('0'))
                   : QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

void registerMetaTypes() {
  qRegisterMetaType<TrainingJob>();
  qRegisterMetaType<TrainingSnapshot>();
  qRegisterMetaType<TrainingOutcome>();
  qRegisterMetaType<TrainProgress>();
}

}  // namespace

TrainingPanel::TrainingPanel(Document* document, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_session(new TrainingSession(this)),
      m_banner(new ErrorBanner(this)),
      m_corpusPath(new QLineEdit(this)),
      m_corpusInfo(new QLabel(this)),
      m_layers(spinBox(1, 24, 4, tr("n_layer: transformer blocks"), this)),
      m_heads(spinBox(1, 32, 4, tr("n_head: must divide n_embd"), this)),
      m_embd(spinBox(4, 1024, 64, tr("n_embd: width of the embeddings"), this)),
      m_block(spinBox(8, 1024, 128, tr("block_size: the longest context, in characters"), this)),
      m_stepsBox(spinBox(1, 1000000, 1000, tr("Optimizer steps"), this)),
      m_batch(spinBox(1, 1024, 32, tr("Windows per step"), this)),
      m_lr(new QDoubleSpinBox(this)),
      m_seed(spinBox(0, std::numeric_limits<int>::max(), 1337,
                     tr("Seed of the weights and the batches: a run is repeatable"), this)),
      m_evalEvery(spinBox(1, 100000, 100,
                          tr("Steps between validation estimates; the views show the weights "
                             "of each one"),
                          this)),
      m_snapshotEvery(spinBox(
          1, 100000, 100, tr("Steps between snapshots kept in memory for the step slider"), this)),
      m_threads(spinBox(1, std::max(1, int(std::thread::hardware_concurrency())), 1,
                        tr("CPU threads for training. One is fastest on a busy or small "
                           "machine: the views compute on another thread meanwhile"),
                        this)),
      m_start(new QPushButton(tr("Start"), this)),
      m_stop(new QPushButton(tr("Stop"), this)),
      m_save(new QPushButton(tr("Save model…"), this)),
      m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)),
      m_plot(new LossPlot(this)),
      m_baseline(new QCheckBox(tr("Show uniform baseline, log V"), this)),
      m_showInViews(new QCheckBox(tr("Show in the views (replaces the window's model)"), this)),
      m_slider(new QSlider(Qt::Horizontal, this)),
      m_sliderLabel(new QLabel(this)) {
  registerMetaTypes();
  m_lr->setDecimals(5);
  m_lr->setRange(1e-5, 1.0);
  m_lr->setSingleStep(1e-4);
  m_lr->setValue(1e-3);
  m_lr->setToolTip(tr("AdamW learning rate"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("not started"));
  m_status->setWordWrap(true);
  // Wrapped labels may hold a path, one long word: it must not set the panel's width.
  for (QLabel* label : {m_status, m_corpusInfo}) {
    QSizePolicy policy = label->sizePolicy();
    policy.setHorizontalPolicy(QSizePolicy::Ignored);
    label->setSizePolicy(policy);
  }
  m_baseline->setChecked(true);
  m_showInViews->setObjectName(QStringLiteral("trainShowInViews"));
  m_showInViews->setToolTip(
      tr("The window's views show the snapshot on the slider, run on the window's text, and "
         "follow the training while the slider is at the newest snapshot"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(corpusForm());
  layout->addWidget(settingsBox());
  layout->addLayout(buttonRow());
  layout->addWidget(m_progress);
  layout->addWidget(m_status);
  // Above the plot, not the form: a message takes the plot's room and moves no control.
  layout->addWidget(m_banner);
  layout->addWidget(m_plot, 1);
  layout->addWidget(m_baseline);
  layout->addLayout(sliderRow());
  layout->addWidget(m_showInViews);
  reflow();

  connect(m_start, &QPushButton::clicked, this, &TrainingPanel::start);
  connect(m_stop, &QPushButton::clicked, this, &TrainingPanel::stop);
  connect(m_save, &QPushButton::clicked, this, &TrainingPanel::saveDialog);
  connect(m_baseline, &QCheckBox::toggled, m_plot, &LossPlot::setBaselineVisible);
  connect(m_slider, &QSlider::valueChanged, this, &TrainingPanel::selectSnapshot);
  connect(m_showInViews, &QCheckBox::toggled, this, [this](bool on) {
    if (on && selectedSnapshot() >= 0) showInDocument(m_session->snapshots()[selectedSnapshot()]);
  });
  connect(m_session, &TrainingSession::progressed, this, &TrainingPanel::onProgress);
  connect(m_session, &TrainingSession::snapshotsChanged, this, &TrainingPanel::onSnapshotsChanged);
  connect(m_session, &TrainingSession::finished, this, &TrainingPanel::onFinished);
}

QFormLayout* TrainingPanel::corpusForm() {
  // Typed or pasted paths are checked when editing ends (Enter or leaving the field).
  m_corpusPath->setObjectName(QStringLiteral("corpusPath"));
  m_corpusPath->setPlaceholderText(tr("a UTF-8 text file: type a path or choose one"));
  m_corpusPath->setClearButtonEnabled(true);
  m_corpusWarning = m_corpusPath->addAction(style()->standardIcon(QStyle::SP_MessageBoxWarning),
                                            QLineEdit::TrailingPosition);
  m_corpusWarning->setVisible(false);
  m_corpusInfo->setWordWrap(true);
  auto* choose = new QPushButton(tr("Choose…"), this);
  auto* corpusRow = new QHBoxLayout;
  corpusRow->addWidget(m_corpusPath, 1);
  corpusRow->addWidget(choose);
  connect(choose, &QPushButton::clicked, this, &TrainingPanel::chooseCorpus);
  connect(m_corpusPath, &QLineEdit::editingFinished, this, [this] {
    const QString path = m_corpusPath->text().trimmed();
    if (path.isEmpty() || path == m_corpusFile) return;
    setCorpusPath(path);
  });
  connect(m_corpusPath, &QLineEdit::textEdited, this,
          [this] { m_corpusWarning->setVisible(false); });
  auto* form = new QFormLayout;
  form->addRow(tr("Corpus:"), corpusRow);
  form->addRow(m_corpusInfo);
  return form;
}

QGroupBox* TrainingPanel::settingsBox() {
  auto* settings = new QGroupBox(tr("Settings"), this);
  m_settingsGrid = new QGridLayout(settings);
  const QList<QPair<QString, QWidget*>> fields = {
      {tr("Layers:"), m_layers},        {tr("Heads:"), m_heads},
      {tr("Embedding:"), m_embd},       {tr("Block:"), m_block},
      {tr("Steps:"), m_stepsBox},       {tr("Batch:"), m_batch},
      {tr("Learning rate:"), m_lr},     {tr("Seed:"), m_seed},
      {tr("Eval every:"), m_evalEvery}, {tr("Snapshot every:"), m_snapshotEvery},
      {tr("Threads:"), m_threads}};
  for (const auto& [text, field] : fields) {
    auto* label = new QLabel(text, settings);
    label->setBuddy(field);
    m_settingsFields.append({label, field});
  }
  return settings;
}

QGridLayout* TrainingPanel::buttonRow() {
  m_stop->setEnabled(false);
  m_save->setEnabled(false);
  m_start->setToolTip(tr("Train from fresh weights with these settings"));
  m_stop->setToolTip(tr("Stop after the current step; the weights so far are kept"));
  m_save->setToolTip(tr("Save the snapshot on the slider as a .safetensors checkpoint"));
  m_buttons = new QGridLayout;
  return m_buttons;
}

int TrainingPanel::oneColumnWidth() const {
  int label = 0, field = 0;
  for (const auto& [l, f] : m_settingsFields) {
    label = std::max(label, l->sizeHint().width());
    field = std::max(field, f->minimumSizeHint().width());
  }
  const QMargins m = m_settingsGrid->contentsMargins();
  return label + field + std::max(0, m_settingsGrid->horizontalSpacing()) + m.left() + m.right() +
         8;
}

int TrainingPanel::twoColumnWidth() const {
  // Two columns need the widest label and field of each column side by side.
  int label = 0, field = 0;
  for (const auto& [l, f] : m_settingsFields) {
    label = std::max(label, l->sizeHint().width());
    field = std::max(field, f->sizeHint().width());
  }
  const QMargins m = m_settingsGrid->contentsMargins();
  const int spacing = std::max(0, m_settingsGrid->horizontalSpacing());
  const int settings = 2 * (label + field) + 3 * spacing + m.left() + m.right() + 8;
  const int buttons = m_start->sizeHint().width() + m_stop->sizeHint().width() +
                      m_save->sizeHint().width() + 3 * std::max(0, m_buttons->horizontalSpacing());
  return std::max(settings, buttons);
}

QSize TrainingPanel::minimumSizeHint() const {
  QSize hint = QWidget::minimumSizeHint();
  if (m_columns == 2) hint.setWidth(std::min(hint.width(), oneColumnWidth()));
  return hint;
}

void TrainingPanel::reflow() {
  const int columns = width() >= twoColumnWidth() ? 2 : 1;
  if (columns == m_columns) return;
  m_columns = columns;
  for (const auto& [l, f] : m_settingsFields) {
    m_settingsGrid->removeWidget(l);
    m_settingsGrid->removeWidget(f);
  }
  for (int i = 0; i < m_settingsFields.size(); ++i) {
    m_settingsGrid->addWidget(m_settingsFields[i].first, i / columns, (i % columns) * 2);
    m_settingsGrid->addWidget(m_settingsFields[i].second, i / columns, (i % columns) * 2 + 1);
  }
  for (QWidget* w : {static_cast<QWidget*>(m_start), static_cast<QWidget*>(m_stop),
                     static_cast<QWidget*>(m_save)})
    m_buttons->removeWidget(w);
  // Start and Stop together; Save on their row when there is room, under them when not.
  m_buttons->addWidget(m_start, 0, 0);
  m_buttons->addWidget(m_stop, 0, 1);
  m_buttons->setColumnStretch(2, 1);
  if (columns == 2) {
    m_buttons->addWidget(m_save, 0, 3);
  } else {
    m_buttons->addWidget(m_save, 1, 0, 1, 2, Qt::AlignLeft);
  }
}

void TrainingPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  reflow();
}

QHBoxLayout* TrainingPanel::sliderRow() {
  m_slider->setEnabled(false);
  m_slider->setRange(0, 0);
  m_slider->setPageStep(1);
  m_slider->setToolTip(tr("The snapshots kept in memory: move back to see how the heads formed"));
  m_sliderLabel->setText(tr("No snapshots yet"));
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Snapshot:"), this));
  row->addWidget(m_slider, 1);
  row->addWidget(m_sliderLabel);
  return row;
}

TrainingPanel::~TrainingPanel() = default;

bool TrainingPanel::setCorpusPath(const QString& path) {
  QString text;
  const QString error = TextFileLoader::load(path, &text, kMaxCorpusBytes);
  if (!error.isEmpty()) {
    // The field keeps what was typed, marked, so it can be corrected; the last good corpus stays.
    m_corpusPath->setText(path);
    m_corpusWarning->setVisible(true);
    m_corpusWarning->setToolTip(error);
    m_corpusPath->setToolTip(error);
    showError(tr("Could not use the corpus: %1").arg(error));
    return false;
  }
  m_corpusWarning->setVisible(false);
  m_corpusFile = path;
  auto corpus = std::make_shared<const std::string>(text.toStdString());
  const std::size_t vocab = TinyGpt::vocabularyOf(*corpus).size();
  m_corpus = std::move(corpus);
  m_corpusPath->setText(path);
  m_corpusPath->setToolTip(path);
  m_corpusInfo->setText(tr("%L1 characters, %2 distinct (uniform guess: %3 nats/char)")
                            .arg(text.size())
                            .arg(vocab)
                            .arg(std::log(double(std::max<std::size_t>(1, vocab))), 0, 'f', 2));
  m_banner->clearMessage();
  return true;
}

void TrainingPanel::setOptions(const TrainOptions& o, int threads) {
  m_layers->setValue(o.model.nLayer);
  m_heads->setValue(o.model.nHead);
  m_embd->setValue(o.model.nEmbd);
  m_block->setValue(o.model.blockSize);
  m_stepsBox->setValue(o.steps);
  m_batch->setValue(o.batch);
  m_lr->setValue(o.learningRate);
  m_seed->setValue(static_cast<int>(std::min<uint64_t>(o.seed, std::numeric_limits<int>::max())));
  m_evalEvery->setValue(o.evalEvery);
  m_snapshotEvery->setValue(o.snapshotEvery);
  m_threads->setValue(threads);
}

TrainOptions TrainingPanel::options() const {
  TrainOptions o;
  o.model.nLayer = m_layers->value();
  o.model.nHead = m_heads->value();
  o.model.nEmbd = m_embd->value();
  o.model.blockSize = m_block->value();
  o.steps = m_stepsBox->value();
  o.batch = m_batch->value();
  o.learningRate = m_lr->value();
  o.seed = static_cast<uint64_t>(m_seed->value());
  o.evalEvery = m_evalEvery->value();
  o.snapshotEvery = m_snapshotEvery->value();
  return o;
}

void TrainingPanel::chooseCorpus() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Choose a training text"), QString(),
                                                    tr("Text files (*.txt);;All files (*)"));
  if (!path.isEmpty()) setCorpusPath(path);
}

bool TrainingPanel::start() {
  if (m_session->isRunning()) return false;
  // A path typed but not yet confirmed (or refused) must not leave the old corpus in use.
  const QString typed = m_corpusPath->text().trimmed();
  if (!typed.isEmpty() && typed != m_corpusFile && !setCorpusPath(typed)) return false;
  if (!m_corpus) {
    showError(tr("Choose a corpus first: a UTF-8 text file to learn from."));
    return false;
  }
  TrainOptions o = options();
  // The shape is checked here, so a bad setting is reported before a thread is busy with it.
  TinyGptConfig shape = o.model;
  shape.vocabSize = static_cast<int>(TinyGpt::vocabularyOf(*m_corpus).size());
  try {
    shape.validate();
  } catch (const Error& e) {
    showError(tr("Invalid settings: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
  m_banner->clearMessage();
  m_follow = true;
  m_plot->clear();
  m_plot->setBaseline(std::log(double(std::max(1, shape.vocabSize))), o.steps);
  m_plot->setBaselineVisible(m_baseline->isChecked());
  m_steps = o.steps;
  m_progress->setRange(0, o.steps);
  m_progress->setValue(0);
  m_progress->setFormat(tr("starting…"));
  m_status->clear();

  m_session->start(m_corpus, o, m_threads->value());  // drops the old snapshots
  setRunning(true);
  return true;
}

void TrainingPanel::stop() {
  if (!m_session->isRunning()) return;
  m_session->stop();
  m_stop->setEnabled(false);
  m_progress->setFormat(tr("stopping…"));
}

void TrainingPanel::onProgress(const TrainProgress& p) {
  m_plot->addTrainLoss(p.step, p.trainLoss);
  if (!std::isnan(p.valLoss)) m_plot->addValidationLoss(p.step, p.valLoss);
  m_progress->setValue(p.step);
  if (!m_session->isStopping()) {
    m_progress->setFormat(tr("step %1 / %2 · %3 elapsed · ETA %4")
                              .arg(p.step)
                              .arg(p.steps)
                              .arg(duration(p.elapsedSeconds), duration(p.etaSeconds)));
  }
  m_status->setText(std::isnan(p.valLoss)
                        ? tr("train loss %1 nats/char").arg(p.trainLoss, 0, 'f', 3)
                        : tr("train loss %1 · validation loss %2 nats/char")
                              .arg(p.trainLoss, 0, 'f', 3)
                              .arg(p.valLoss, 0, 'f', 3));
}

void TrainingPanel::onFinished(const TrainingOutcome& outcome) {
  setRunning(false);
  if (!outcome.error.isEmpty()) {
    showError(tr("Training failed: %1").arg(outcome.error));
    m_progress->setFormat(tr("failed"));
    Q_EMIT runFinished(false);
    return;
  }
  m_progress->setValue(outcome.stepsDone);
  // Stopped early: the curve fills the plot rather than the left of the planned steps.
  if (outcome.cancelled) m_plot->setStepsDone(outcome.stepsDone);
  m_progress->setFormat(outcome.cancelled
                            ? tr("stopped at step %1 of %2").arg(outcome.stepsDone).arg(m_steps)
                            : tr("done: %1 steps").arg(outcome.stepsDone));
  if (!outcome.cancelled) {
    m_status->setText(
        tr("Final validation loss %1 nats/char").arg(outcome.finalValLoss, 0, 'f', 3));
  }
  Q_EMIT runFinished(outcome.cancelled);
}

void TrainingPanel::onSnapshotsChanged() {
  updateSlider();
  if (m_follow && !m_session->snapshots().empty()) showInDocument(m_session->snapshots().back());
}

void TrainingPanel::updateSlider() {
  const QSignalBlocker blocker(m_slider);
  const int count = int(m_session->snapshots().size());
  const int previousStep =
      selectedSnapshot() >= 0 ? m_session->snapshots()[selectedSnapshot()].step : -1;
  m_slider->setRange(0, std::max(0, count - 1));
  m_slider->setEnabled(count > 1);
  if (m_follow) {
    m_slider->setValue(count - 1);
  } else {
    // Stay on the step the user chose, wherever thinning moved it.
    for (int i = 0; i < count; ++i) {
      if (m_session->snapshots()[i].step <= previousStep) m_slider->setValue(i);
    }
  }
  m_save->setEnabled(count > 0);
  const int index = selectedSnapshot();
  m_sliderLabel->setText(index < 0 ? tr("No snapshots yet")
                                   : tr("step %1 (%2 of %3)")
                                         .arg(m_session->snapshots()[index].step)
                                         .arg(index + 1)
                                         .arg(count));
}

int TrainingPanel::selectedSnapshot() const {
  if (m_session->snapshots().empty()) return -1;
  return std::clamp(m_slider->value(), 0, int(m_session->snapshots().size()) - 1);
}

void TrainingPanel::selectSnapshot(int index) {
  if (index < 0 || index >= int(m_session->snapshots().size())) return;
  {
    const QSignalBlocker blocker(m_slider);
    m_slider->setValue(index);
  }
  // Back at the newest snapshot, the views follow the training again.
  m_follow = index == int(m_session->snapshots().size()) - 1;
  updateSlider();
  showInDocument(m_session->snapshots()[index]);
}

void TrainingPanel::setShowInViews(bool on) { m_showInViews->setChecked(on); }

bool TrainingPanel::showsInViews() const { return m_showInViews->isChecked(); }

void TrainingPanel::showInDocument(const TrainingSnapshot& snapshot) {
  // The window's model is the user's choice: a training run replaces it only when asked to.
  if (!m_document || !snapshot.model || !m_showInViews->isChecked()) return;
  const QString name = tr("step %1").arg(snapshot.step);
  m_document->setModel(
      name, snapshot.model->asModel(tr("trained, step %1").arg(snapshot.step).toStdString()));
}

QString TrainingPanel::saveModel(const QString& path) const {
  const int index = selectedSnapshot();
  if (index < 0) return tr("there is no trained model yet");
  try {
    m_session->snapshots()[index].model->save(path.toStdString());
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

void TrainingPanel::saveDialog() {
  const int index = selectedSnapshot();
  if (index < 0) return;
  QString path = QFileDialog::getSaveFileName(
      this, tr("Save model"),
      tr("tiny-gpt-step%1.safetensors").arg(m_session->snapshots()[index].step),
      tr("Tiny-GPT checkpoints (*.safetensors)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QStringLiteral(".safetensors"))) path += QStringLiteral(".safetensors");
  const QString error = saveModel(path);
  if (!error.isEmpty()) {
    showError(tr("Could not save the model: %1").arg(error));
    return;
  }
  m_status->setText(tr("Saved step %1 to %2: open it with \"Open checkpoint file…\".")
                        .arg(m_session->snapshots()[index].step)
                        .arg(QFileInfo(path).fileName()));
}

void TrainingPanel::setRunning(bool running) {
  m_start->setEnabled(!running);
  m_stop->setEnabled(running);
  for (QWidget* w :
       std::initializer_list<QWidget*>{m_layers, m_heads, m_embd, m_block, m_stepsBox, m_batch,
                                       m_lr, m_seed, m_evalEvery, m_snapshotEvery, m_threads})
    w->setEnabled(!running);
}

void TrainingPanel::showError(const QString& message) { m_banner->showMessage(message); }

QString TrainingPanel::errorMessage() const {
  return m_banner->isHidden() ? QString() : m_banner->message();
}

}  // namespace attnscope::gui
