// SPDX-License-Identifier: GPL-3.0-or-later
#include "document.h"

#include <QThread>

#include <algorithm>

#include "compute_worker.h"
#include "logit_lens_view.h"
#include "model_spec_equal.h"
#include "second_model_runner.h"

namespace attnscope::gui {

namespace {

// Long enough to skip the computations between keystrokes, short enough to feel live.
constexpr int kDebounceMs = 150;

void registerMetaTypes() {
  qRegisterMetaType<ComputeJob>();
  qRegisterMetaType<ComputeOutcome>();
  qRegisterMetaType<render::ResultPtr>();
  qRegisterMetaType<render::ViewState>();
  qRegisterMetaType<ModelSpec>();
  qRegisterMetaType<ModelInfo>();
  qRegisterMetaType<AblationJob>();
  qRegisterMetaType<AblationOutcome>();
  qRegisterMetaType<render::AblationStatus>();
  qRegisterMetaType<GenerationJob>();
  qRegisterMetaType<GenerationOutcome>();
  qRegisterMetaType<GenerationSettings>();
}

// Whether two computations read the same input: the ablation of one is valid for the other.
bool sameInput(const ComputeJob& a, const ComputeJob& b) {
  return sameModelSpec(a.spec, b.spec) && a.model == b.model &&
         a.request.texts == b.request.texts && a.request.pair == b.request.pair &&
         a.request.context == b.request.context && a.request.device == b.request.device &&
         a.request.target == b.request.target && a.request.generate == b.request.generate;
}

}  // namespace

Document::Document(QObject* parent)
    : QObject(parent), m_latestGeneration(std::make_shared<std::atomic<quint64>>(0)) {
  registerMetaTypes();
  m_debounce.setSingleShot(true);
  m_debounce.setInterval(kDebounceMs);
  connect(&m_debounce, &QTimer::timeout, this, &Document::recompute);

  m_thread = new QThread(this);
  m_thread->setObjectName(QStringLiteral("attnscope-compute"));
  m_worker = new ComputeWorker(m_latestGeneration);
  m_worker->moveToThread(m_thread);
  connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
  connect(this, &Document::computeRequested, m_worker, &ComputeWorker::compute,
          Qt::QueuedConnection);
  connect(m_worker, &ComputeWorker::computed, this, &Document::onComputed, Qt::QueuedConnection);
  connect(m_worker, &ComputeWorker::computePreview, this, &Document::onPreview,
          Qt::QueuedConnection);
  connect(
      m_worker, &ComputeWorker::computeProgress, this,
      [this](quint64 generation, int done, int total) {
        if (generation == m_generation && m_busy) Q_EMIT computeProgress(done, total);
      },
      Qt::QueuedConnection);
  connect(this, &Document::ablationRequested, m_worker, &ComputeWorker::ablate,
          Qt::QueuedConnection);
  connect(m_worker, &ComputeWorker::ablationProgress, this, &Document::onAblationProgress,
          Qt::QueuedConnection);
  connect(m_worker, &ComputeWorker::ablated, this, &Document::onAblated, Qt::QueuedConnection);

  // Generation steps run on the same worker, which already holds the opened model.
  m_generator = new GenerationController(
      [this] {
        GenerationJob job;
        const ComputeJob input = currentInput({});
        job.spec = input.spec;
        job.model = input.model;
        const QStringList items = batchTexts(m_text);
        // Several lines are a batch: the selected one is the prompt.
        if (!items.isEmpty())
          job.request.text =
              items[std::clamp(m_view.item, 0, static_cast<int>(items.size()) - 1)].toStdString();
        job.request.device = m_run.device;
        job.request.limits.memoryLimitBytes = m_memoryLimitBytes;
        return job;
      },
      this);
  connect(m_generator, &GenerationController::stepRequested, m_worker, &ComputeWorker::generateStep,
          Qt::QueuedConnection);
  connect(m_worker, &ComputeWorker::generated, m_generator, &GenerationController::onStepped,
          Qt::QueuedConnection);
  // At a selected step every view shows that step's forward.
  connect(m_generator, &GenerationController::selectedStepChanged, this,
          [this] { showGenerationStep(true); });
  connect(m_generator, &GenerationController::stepsChanged, this,
          [this] { showGenerationStep(true); });
  connect(m_generator, &GenerationController::failed, this, [this](const QString& message) {
    m_generationError = message;
    setError(message);
  });
  connect(m_generator, &GenerationController::succeeded, this, [this] {
    if (!m_generationError.isEmpty() && m_error == m_generationError) setError(QString());
    m_generationError.clear();
  });
  m_thread->start();
}

Document::~Document() {
  m_generator->stop();
  // Abandon the running job so quit() does not wait for a long forward pass.
  if (m_cancelCurrent) m_cancelCurrent->store(true);
  if (m_ablationCancel) m_ablationCancel->store(true);
  m_latestGeneration->store(~quint64{0});
  m_thread->quit();
  m_thread->wait();
}

QStringList Document::batchTexts(const QString& text) {
  QStringList items;
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    QString item = line;
    if (item.endsWith(QLatin1Char('\r'))) item.chop(1);
    if (!item.trimmed().isEmpty()) items.append(item);
  }
  return items;
}

Session Document::session() const {
  Session s;
  s.text = m_text;
  s.model = m_spec;
  s.run = m_run;
  s.view = m_view;
  s.currentView = m_currentView;
  return s;
}

void Document::loadSession(const Session& session) {
  m_generator->discard();
  if (session.text != m_text) {
    m_text = session.text;
    Q_EMIT textChanged(m_text);
  }
  // The session's run options belong to its model: no inputs are swapped, and a model that fails
  // to open is shown failed (its session is what the user asked for), not replaced.
  m_modifiedBeforeTrial.reset();
  if (!sameModelSpec(session.model, m_spec)) {
    m_spec = session.model;
    Q_EMIT modelSpecChanged(m_spec);
  }
  if (session.run != m_run) {
    m_run = session.run;
    Q_EMIT runOptionsChanged(m_run);
  }
  // Not clamped against the current result: the session's own result will have its sizes.
  if (session.view != m_view) {
    m_view = session.view;
    Q_EMIT viewStateChanged(m_view);
  }
  setCurrentView(session.currentView);
  setModified(false);
  recompute();
}

void Document::setSessionPath(const QString& path) {
  if (path != m_sessionPath) {
    m_sessionPath = path;
    Q_EMIT sessionPathChanged(m_sessionPath);
  }
  setModified(false);
}

void Document::setModified(bool modified) {
  if (modified == m_modified) return;
  m_modified = modified;
  Q_EMIT modifiedChanged(m_modified);
}

void Document::setText(const QString& text) {
  if (text == m_text) return;
  m_generator->discard();
  m_text = text;
  Q_EMIT textChanged(m_text);
  noteEditDuringTrial();
  setModified(true);
  scheduleRecompute();
}

void Document::setModelSpec(const ModelSpec& spec) {
  if (sameModelSpec(spec, m_spec)) return;
  // Until it opens, the choice is a trial: a model that fails to open leaves everything as it was.
  if (!m_modifiedBeforeTrial) m_modifiedBeforeTrial = m_modified;
  switchModel(spec);
  setModified(true);
  scheduleRecompute();
}

void Document::switchModel(const ModelSpec& spec) {
  const QString from = QString::fromStdString(m_spec.source);
  const QString to = QString::fromStdString(spec.source);
  m_generator->discard();
  m_spec = spec;
  Q_EMIT modelSpecChanged(m_spec);
  if (from == to) return;
  m_inputsByModel.insert(
      from, {m_run.usePair, m_run.pair, m_run.useTarget, m_run.target, m_run.generate});
  // A model chosen for the first time reads none of them; their texts stay in the boxes, to be
  // turned on again on purpose.
  const ModelInputs kept = m_inputsByModel.value(to, {false, m_run.pair, false, m_run.target, 0});
  RunOptions run = m_run;
  run.usePair = kept.usePair;
  run.pair = kept.pair;
  run.useTarget = kept.useTarget;
  run.target = kept.target;
  run.generate = kept.generate;
  if (run == m_run) return;
  m_run = run;
  Q_EMIT runOptionsChanged(m_run);
}

void Document::turnOffInputsTheModelIgnores(const ModelInfo& info) {
  RunOptions run = m_run;
  if (!info.supportsPair) run.usePair = false;
  if (!info.encoderDecoder()) {
    run.useTarget = false;
    run.generate = 0;
  }
  if (run == m_run) return;
  m_run = run;
  if (m_pendingJob) {  // what the worker really ran, for the ablation's comparison
    if (!run.usePair) m_pendingJob->request.pair.reset();
    if (!run.useTarget) m_pendingJob->request.target.reset();
    m_pendingJob->request.generate = run.generate;
  }
  Q_EMIT runOptionsChanged(m_run);
}

void Document::noteEditDuringTrial() {
  if (m_modifiedBeforeTrial) m_modifiedBeforeTrial = true;
}

void Document::revertFailedModel(const QString& error) {
  const QString failed = QString::fromStdString(m_spec.source);
  const bool modified = *m_modifiedBeforeTrial;
  m_modifiedBeforeTrial.reset();
  m_inputsByModel.remove(failed);  // it never opened: nothing of it is worth keeping
  switchModel(*m_openedSpec);
  setModified(modified);
  setError(tr("%1\nStill showing %2: the model that failed was not kept.")
               .arg(error, QString::fromStdString(m_spec.source)));
}

bool Document::isMemorySource(const std::string& source) {
  return QString::fromStdString(source).startsWith(memorySourcePrefix());
}

void Document::setModel(const QString& name, std::shared_ptr<Model> model) {
  if (!model) return;
  m_memorySource = (memorySourcePrefix() + name).toStdString();
  m_memoryModel = std::move(model);
  ModelSpec spec = m_spec;
  spec.source = m_memorySource;
  m_modifiedBeforeTrial.reset();  // an in-memory model cannot fail to open
  switchModel(spec);
  setModified(true);
  // Even under the same name this may be different weights (a new training run): always rerun.
  scheduleRecompute();
}

void Document::setRunOptions(const RunOptions& options) {
  if (options == m_run) return;
  m_run = options;
  Q_EMIT runOptionsChanged(m_run);
  noteEditDuringTrial();
  setModified(true);
  scheduleRecompute();
}

void Document::setViewState(const render::ViewState& state) {
  const render::ViewState clamped = clampedToResult(state);
  if (clamped == m_view) return;
  m_view = clamped;
  Q_EMIT viewStateChanged(m_view);
  recomputeIfLayerMissing();
}

void Document::recomputeIfLayerMissing() {
  // A run that kept only some layers (memory limit) computes the one the user opened now. A
  // preview's missing layers are on their way: onComputed checks again.
  if (!m_result || m_result->preview || m_result->group(m_view.group).keptLayers.empty()) return;
  const AttentionGroup& g = m_result->group(m_view.group);
  const bool compare = m_currentView == render::ViewKind::Compare;
  if (!g.hasLayer(m_view.layer) || (compare && !g.hasLayer(m_view.vsLayer))) scheduleRecompute();
}

void Document::setMemoryLimitBytes(uint64_t bytes) {
  if (bytes == m_memoryLimitBytes) return;
  m_memoryLimitBytes = bytes;
  Q_EMIT memoryEstimateChanged();
  scheduleRecompute();
}

void Document::setCompareModel(const std::optional<ModelSpec>& spec) {
  if (!spec && !m_compareSpec) return;
  if (spec && m_compareSpec && sameModelSpec(*spec, *m_compareSpec)) return;
  m_compareSpec = spec;
  m_compareResult = nullptr;
  if (!m_compareError.isEmpty() && m_error == m_compareError) setError(QString());
  m_compareError.clear();
  if (m_compareRunner) m_compareRunner->cancel();
  Q_EMIT compareResultChanged(nullptr);
  if (m_compareSpec) runCompareModel();
}

void Document::runCompareModel() {
  // B's model runs the main model's last request: the same text, options and limits.
  if (!m_compareSpec || m_currentView != render::ViewKind::Compare || !m_resultJob) return;
  if (!m_compareRunner) {
    m_compareRunner = new SecondModelRunner(this);
    connect(m_compareRunner, &SecondModelRunner::finished, this,
            [this](const render::ResultPtr& result, const QString& error) {
              m_compareResult = result;
              if (!error.isEmpty()) {
                m_compareError = tr("Compare, B's model: %1").arg(error);
                setError(m_compareError);
              } else if (!m_compareError.isEmpty()) {
                if (m_error == m_compareError) setError(QString());
                m_compareError.clear();
              }
              Q_EMIT compareResultChanged(m_compareResult);
            });
  }
  ComputeJob job = *m_resultJob;
  job.spec = *m_compareSpec;
  job.spec.memoryLimitBytes = m_memoryLimitBytes;
  job.request.logitLens = 0;
  m_compareRunner->run(job);
}

void Document::setCurrentView(render::ViewKind kind) {
  if (kind == m_currentView) return;
  m_currentView = kind;
  Q_EMIT currentViewChanged(kind);
  recomputeIfLayerMissing();
  if (kind == render::ViewKind::Compare && m_compareSpec && !m_compareResult) runCompareModel();
  // The logit lens is computed only for its view: opening it runs again with it (causal models).
  if (kind == render::ViewKind::LogitLens && m_result && m_result->logitLensIds.empty() &&
      (!m_modelInfo || (m_modelInfo->causal && !m_modelInfo->encoderDecoder())))
    scheduleRecompute();
}

void Document::selectHead(int layer, int head) {
  render::ViewState s = m_view;
  s.layer = layer;
  s.head = head;
  setViewState(s);
}

void Document::selectItem(int item) {
  render::ViewState s = m_view;
  s.item = item;
  setViewState(s);
}

void Document::stepItem(int delta) {
  const int batch = std::max(1, m_result ? m_result->group(m_view.group).batch() : 1);
  selectItem(((m_view.item + delta) % batch + batch) % batch);
}

void Document::stepHead(int delta) {
  if (!m_result) return;
  const int heads = std::max(1, m_result->group(m_view.group).heads());
  render::ViewState s = m_view;
  s.head = ((s.head + delta) % heads + heads) % heads;  // wraps, so stepping never gets stuck
  setViewState(s);
}

void Document::stepLayer(int delta) {
  if (!m_result) return;
  const int layers = std::max(1, m_result->group(m_view.group).layers());
  render::ViewState s = m_view;
  s.layer = ((s.layer + delta) % layers + layers) % layers;
  setViewState(s);
}

void Document::scheduleRecompute() { m_debounce.start(); }

quint64 Document::nextGeneration() {
  if (m_cancelCurrent) m_cancelCurrent->store(true);
  m_cancelCurrent.reset();
  ++m_generation;
  m_latestGeneration->store(m_generation);
  return m_generation;
}

void Document::recompute() {
  m_debounce.stop();
  const quint64 generation = nextGeneration();

  // Problems the user can see without running anything are reported at once; the previous
  // result stays on screen.
  const QStringList items = batchTexts(m_text);
  // A new text, model or option makes the ablation stale, whether or not this run starts.
  dropAblationUnlessFor(currentInput(items));
  if (items.isEmpty()) {
    setBusy(false);
    setError(tr("Type a sentence: each non-empty line is one batch item."));
    return;
  }
  if (m_spec.source == "toy") {
    try {
      m_spec.toy.validate();
    } catch (const Error& e) {
      setBusy(false);
      setError(tr("Invalid configuration: %1").arg(QString::fromStdString(e.what())));
      return;
    }
  }
  const bool inMemory = isMemorySource(m_spec.source);
  if (inMemory && m_spec.source != m_memorySource) {
    setBusy(false);
    setError(tr("The model %1 existed only in memory and is gone: choose another model.")
                 .arg(QString::fromStdString(m_spec.source).mid(memorySourcePrefix().size())));
    return;
  }
  if (m_run.useContext && m_run.context.trimmed().isEmpty()) {
    setBusy(false);
    setError(tr("Cross-attention is on but the context is empty: type a context or turn it off."));
    return;
  }

  // A model that takes no pairs ignores the option (the worker says so): the model is only known
  // once the worker has opened it.
  const bool pair = m_run.usePair;
  if (pair && m_run.pair.trimmed().isEmpty()) {
    setBusy(false);
    setError(
        tr("The sentence pair is on but the second sentence is empty: type it or turn the "
           "pair off."));
    return;
  }

  ComputeJob job = currentInput(items);
  job.generation = generation;
  job.scoresLimitBytes = m_scoresLimitBytes;
  job.spec.memoryLimitBytes = m_memoryLimitBytes;
  job.request.limits.memoryLimitBytes = m_memoryLimitBytes;
  // Every edit runs the model again: keep float32 copies of F16/BF16 weights between runs while
  // memory allows (a 1B BF16 model otherwise re-widens 2.3 GB of weights per keystroke).
  job.request.limits.weightCacheBytes = attnscope::RunLimits::kAutoWeightCache;
  job.focusLayers = {m_view.layer};
  if (m_currentView == render::ViewKind::Compare) job.focusLayers.push_back(m_view.vsLayer);
  // L softmaxes over the vocabulary per position: only while the view that shows them is open.
  if (m_currentView == render::ViewKind::LogitLens)
    job.request.logitLens = render::LogitLensView::kTopTokens;
  m_pendingJob = job;
  job.cancel = std::make_shared<std::atomic<bool>>(false);
  job.request.cancel = job.cancel.get();
  m_cancelCurrent = job.cancel;
  m_pendingTexts = items;

  setBusy(true);
  Q_EMIT computeStarted(generation);
  Q_EMIT computeRequested(job);
}

void Document::onComputed(const ComputeOutcome& outcome) {
  if (outcome.generation != m_generation) return;  // superseded by a newer edit
  m_cancelCurrent.reset();
  setBusy(false);
  if (outcome.modelInfo) {
    m_modelInfo = outcome.modelInfo;
    Q_EMIT modelInfoChanged(*m_modelInfo);
  }
  if (outcome.openFailed && m_modifiedBeforeTrial && m_openedSpec &&
      !sameModelSpec(*m_openedSpec, m_spec)) {
    revertFailedModel(outcome.error);
    return;
  }
  if (!outcome.openFailed && m_pendingJob) {
    m_openedSpec = m_pendingJob->spec;
    m_modifiedBeforeTrial.reset();
  }
  if (outcome.modelInfo) turnOffInputsTheModelIgnores(*outcome.modelInfo);
  if (!outcome.result) {
    setError(outcome.error);
    return;
  }
  m_computeMs = outcome.computeMs;
  m_result = outcome.result;
  m_estimate = outcome.estimate;
  Q_EMIT memoryEstimateChanged();
  m_resultTexts = m_pendingTexts;
  m_resultJob = m_pendingJob;
  if (m_resultJob) dropAblationUnlessFor(*m_resultJob);
  m_workerNotices = outcome.notices;
  setError(QString());
  showGenerationStep(false);
  // Clamp before announcing the result, so views never see a selection outside it.
  const render::ViewState clamped = clampedToResult(m_view);
  const bool stateChanged = clamped != m_view;
  m_view = clamped;
  Q_EMIT resultChanged(shownResult());
  if (stateChanged) Q_EMIT viewStateChanged(m_view);
  // B's model on the same text: now when the Compare view shows it, else when it opens.
  if (m_compareSpec && m_compareResult) {
    m_compareResult = nullptr;
    Q_EMIT compareResultChanged(nullptr);
  }
  runCompareModel();
  recomputeIfLayerMissing();  // a layer opened while a preview showed may not be kept
}

void Document::onPreview(quint64 generation, const render::ResultPtr& preview) {
  // Only for the run in flight, and only while it is: the full result replaces it.
  if (generation != m_generation || !m_busy || !preview) return;
  m_result = preview;
  m_resultTexts = m_pendingTexts;
  // The view state is left as the user set it (a preview holds one layer; the others come).
  Q_EMIT resultChanged(m_result);
}

ComputeJob Document::currentInput(const QStringList& items) const {
  ComputeJob job;
  job.spec = m_spec;
  if (isMemorySource(m_spec.source) && m_spec.source == m_memorySource) job.model = m_memoryModel;
  for (const QString& item : items) job.request.texts.push_back(item.toStdString());
  if (m_run.useContext) job.request.context = m_run.context.toStdString();
  if (m_run.usePair) job.request.pair = m_run.pair.toStdString();
  // A model without a decoder ignores these (the worker drops them).
  if (m_run.useTarget) job.request.target = m_run.target.toStdString();
  job.request.generate = m_run.generate;
  job.request.device = m_run.device;
  return job;
}

void Document::dropAblationUnlessFor(const ComputeJob& input) {
  if (m_ablation.phase == render::AblationStatus::Phase::Idle) return;
  if (sameInput(input, m_ablationInput)) return;
  if (m_ablationCancel) m_ablationCancel->store(true);
  m_ablationCancel.reset();
  ++m_ablationGeneration;  // whatever the worker still sends for it is dropped
  setAblation(render::AblationStatus());
}

void Document::runAblation(bool estimate) {
  using Phase = render::AblationStatus::Phase;
  if (m_ablation.phase == Phase::Running || !m_result || !m_resultJob) return;
  const std::vector<std::string>& texts = m_resultJob->request.texts;
  if (texts.empty()) return;
  const int item = std::clamp(m_view.item, 0, static_cast<int>(texts.size()) - 1);
  AblationJob job;
  job.generation = ++m_ablationGeneration;
  job.spec = m_resultJob->spec;
  job.model = m_resultJob->model;
  job.request.run = m_resultJob->request;
  // The map is of one prediction: the batch item the views show.
  job.request.run.texts = {texts[static_cast<std::size_t>(item)]};
  job.request.estimate = estimate;
  job.cancel = std::make_shared<std::atomic<bool>>(false);
  job.request.run.cancel = job.cancel.get();
  m_ablationCancel = job.cancel;
  m_ablationInput = *m_resultJob;

  render::AblationStatus status;
  status.phase = Phase::Running;
  status.estimate = estimate;
  status.item = item;
  status.total = m_result->group().layers() * m_result->group().heads();
  setAblation(status);
  Q_EMIT ablationRequested(job);
}

void Document::cancelAblation() {
  if (m_ablation.phase != render::AblationStatus::Phase::Running || m_ablation.cancelling) return;
  if (m_ablationCancel) m_ablationCancel->store(true);
  render::AblationStatus status = m_ablation;
  status.cancelling = true;
  setAblation(status);
}

void Document::onAblationProgress(quint64 generation, int done, int total) {
  if (generation != m_ablationGeneration ||
      m_ablation.phase != render::AblationStatus::Phase::Running)
    return;
  render::AblationStatus status = m_ablation;
  status.done = done;
  status.total = total;
  m_ablation = status;
  Q_EMIT ablationProgress(done, total);
  Q_EMIT ablationChanged(m_ablation);
}

void Document::onAblated(const AblationOutcome& outcome) {
  using Phase = render::AblationStatus::Phase;
  if (outcome.generation != m_ablationGeneration) return;  // cleared or superseded meanwhile
  m_ablationCancel.reset();
  render::AblationStatus status = m_ablation;
  status.cancelling = false;
  if (outcome.ablation) {
    status.phase = Phase::Done;
    status.ablation = outcome.ablation;
    status.estimate = outcome.ablation->estimate;
    status.total = outcome.ablation->layers * outcome.ablation->heads;
    status.done = status.total;
  } else if (outcome.errorKind == ErrorKind::Cancelled) {
    status.phase = Phase::Cancelled;
  } else {
    status.phase = Phase::Failed;
    status.message = outcome.error;
  }
  setAblation(status);
}

void Document::setAblation(const render::AblationStatus& status) {
  m_ablation = status;
  Q_EMIT ablationChanged(m_ablation);
}

void Document::setError(const QString& message) {
  if (message == m_error) return;
  m_error = message;
  Q_EMIT errorChanged(m_error);
}

void Document::setBusy(bool busy) {
  if (busy == m_busy) return;
  m_busy = busy;
  Q_EMIT busyChanged(busy);
}

render::ViewState Document::clampedToResult(render::ViewState s) const {
  const auto clamp = [](int v, int count) { return std::clamp(v, 0, std::max(0, count - 1)); };
  if (!shownResult()) {
    s.layer = std::max(0, s.layer);
    s.head = std::max(0, s.head);
    s.item = std::max(0, s.item);
    return s;
  }
  const AttentionResult& r = *shownResult();
  // A group the result does not have (a session from another model) falls back to the main one.
  if (!s.group.empty() && !r.findGroup(s.group)) s.group.clear();
  const AttentionGroup& g = r.group(s.group);
  s.layer = clamp(s.layer, g.layers());
  s.head = clamp(s.head, g.heads());
  s.item = clamp(s.item, g.batch());
  s.vsLayer = clamp(s.vsLayer, g.layers());
  s.vsHead = clamp(s.vsHead, g.heads());
  s.vsItem = clamp(s.vsItem, g.batch());
  if (s.pinnedQuery >= g.queries()) s.pinnedQuery = -1;
  if (s.pinnedKey >= g.keys()) s.pinnedKey = -1;
  if (s.pinnedQuery < -1) s.pinnedQuery = -1;
  return s;
}

void Document::showGenerationStep(bool announce) {
  const render::ResultPtr before = shownResult();
  const QString noticeBefore = m_stepNotice;
  const GenerationController& g = *m_generator;
  const int selected = g.selectedStep();
  const std::shared_ptr<const GenerationStep> step =
      selected >= 0 ? g.steps()[static_cast<std::size_t>(selected)] : nullptr;
  if (step != m_stepShown || !announce) {
    // Held beside the prompt's run: within what that run's estimate leaves of the limit.
    const uint64_t room =
        m_memoryLimitBytes > m_estimate.total ? m_memoryLimitBytes - m_estimate.total : 0;
    const int items = m_result ? m_result->group().batch() : 1;
    m_stepNotice.clear();
    m_stepResult = step ? g.stepResult(m_result, std::clamp(m_view.item, 0, std::max(0, items - 1)),
                                       room, &m_stepNotice)
                        : nullptr;
    m_stepShown = step;
  }
  if (!announce) return;
  render::ViewState state = m_view;
  if (m_stepResult) {
    // The new token's row: the query that chose it.
    state.pinnedQuery = static_cast<int>(g.promptTokens().size()) + selected - 1;
    state.queryGroup.clear();
  }
  state = clampedToResult(state);
  if (shownResult() != before || m_stepNotice != noticeBefore) Q_EMIT resultChanged(shownResult());
  if (state != m_view) {
    m_view = state;
    Q_EMIT viewStateChanged(m_view);
  }
}

bool Document::canGenerate() const {
  return m_modelInfo && m_modelInfo->causal && !m_modelInfo->encoderDecoder();
}

void Document::keepGeneratedText() {
  const QString prompt = m_generator->prompt();
  const QString generated = m_generator->generatedText();
  if (prompt.isEmpty() || generated.isEmpty()) return;
  // The prompt is one line of the text (the batch item shown): that line gets the continuation.
  QStringList lines = m_text.split(QLatin1Char('\n'));
  for (QString& line : lines) {
    if (line == prompt || (line.endsWith(QLatin1Char('\r')) && line.chopped(1) == prompt)) {
      line.insert(line.endsWith(QLatin1Char('\r')) ? line.size() - 1 : line.size(), generated);
      setText(lines.join(QLatin1Char('\n')));
      return;
    }
  }
  setText(m_text + generated);
}

}  // namespace attnscope::gui
