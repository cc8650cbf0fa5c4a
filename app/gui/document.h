// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QHash>
#include <QObject>
#include <QStringList>
#include <QTimer>

#include <atomic>
#include <memory>
#include <optional>

#include "ablation_job.h"
#include "ablation_status.h"
#include "compute_job.h"
#include "generation_controller.h"
#include "run_options.h"
#include "session.h"

class QThread;

namespace attnscope::gui {

class ComputeWorker;
class SecondModelRunner;

/// The application state: text, model, run options, view state, current result and error. Views
/// and panels observe its signals and send intents back through its slots. Edits recompute after
/// a short debounce on a worker thread; every request carries a generation number and a result
/// that is not for the latest generation is dropped, so a slow old run never overwrites a newer
/// one.
class Document final : public QObject {
  Q_OBJECT
 public:
  explicit Document(QObject* parent = nullptr);
  ~Document() override;

  const QString& text() const { return m_text; }
  const ModelSpec& modelSpec() const { return m_spec; }
  const RunOptions& runOptions() const { return m_run; }
  const render::ViewState& viewState() const { return m_view; }
  render::ViewKind currentView() const { return m_currentView; }
  const render::ResultPtr& result() const { return m_result; }
  /// What the views show: result(), or at a selected generation step the attention of that
  /// step's forward (GenerationController::stepResult), with the new token's row pinned.
  const render::ResultPtr& shownResult() const { return m_stepResult ? m_stepResult : m_result; }
  /// The Compare view's second model (B from another model), if one is chosen, and its result on
  /// the same text (null until it arrives, or when it failed).
  const std::optional<attnscope::ModelSpec>& compareModel() const { return m_compareSpec; }
  const render::ResultPtr& compareResult() const { return m_compareResult; }
  /// The batch texts the current result was computed from (the text may have changed since).
  const QStringList& resultTexts() const { return m_resultTexts; }
  const QString& error() const { return m_error; }
  /// What the worker had to tell about the current result beyond its own notices (scores dropped).
  /// And why a selected generation step is not shown beyond the Step view (the memory limit).
  QStringList workerNotices() const {
    return m_stepNotice.isEmpty() ? m_workerNotices : m_workerNotices + QStringList{m_stepNotice};
  }
  const std::optional<ModelInfo>& modelInfo() const { return m_modelInfo; }
  bool isBusy() const { return m_busy; }
  quint64 generation() const { return m_generation; }
  double computeMs() const { return m_computeMs; }

  Session session() const;
  /// Replaces text, model, options and view state at once and recomputes immediately. The
  /// document is then unmodified (the caller sets the session path, if it came from a file).
  void loadSession(const Session& session);

  /// The file the session was last opened from or saved to (absolute); empty for "Untitled".
  const QString& sessionPath() const { return m_sessionPath; }
  /// Whether text, model or run options changed since the session was loaded or saved.
  bool isModified() const { return m_modified; }
  /// After opening or saving: records the path and marks the document unmodified.
  void setSessionPath(const QString& path);
  void setModified(bool modified);
  /// Whether the model exists only in memory (a training snapshot), so a session saved now
  /// could not reopen it.
  bool hasMemoryOnlyModel() const { return isMemorySource(m_spec.source); }

  /// The ModelSpec source prefix of in-memory models ("memory:step 300").
  static QString memorySourcePrefix() { return QStringLiteral("memory:"); }
  static bool isMemorySource(const std::string& source);

  /// The batch: each line with something other than whitespace is one item.
  static QStringList batchTexts(const QString& text);

  void setDebounceInterval(int ms) { m_debounce.setInterval(ms); }
  /// Above this estimate of the attention tensor the scores are not computed (ComputeJob).
  void setScoresLimitBytes(uint64_t bytes) { m_scoresLimitBytes = bytes; }
  int debounceInterval() const { return m_debounce.interval(); }
  /// What runs and opening may use (RunLimits, ModelSpec): a run whose attention does not fit
  /// keeps only the layers on screen and their neighbours (ComputeWorker).
  void setMemoryLimitBytes(uint64_t bytes);
  uint64_t memoryLimitBytes() const { return m_memoryLimitBytes; }
  /// The estimate of the last successful run (total 0 before one, or for models that cannot say).
  const MemoryEstimate& memoryEstimate() const { return m_estimate; }
  /// The head ablation of the current result's text: idle, running, done, failed or cancelled.
  const render::AblationStatus& ablation() const { return m_ablation; }
  /// The step-by-step generation after the text (decoder models): its steps, selected step and
  /// intents. Discarded when the text or the model changes.
  GenerationController* generator() const { return m_generator; }
  /// Whether the model shown can generate step by step (a decoder-only language model).
  bool canGenerate() const;

 public Q_SLOTS:
  void setText(const QString& text);
  void setModelSpec(const attnscope::ModelSpec& spec);
  /// Shows a model that exists only in memory (a training snapshot): the spec's source becomes
  /// "memory:<name>" and the worker runs `model` instead of opening a file. The document keeps the
  /// last such model, so choosing its source again (the model menu) still works.
  void setModel(const QString& name, std::shared_ptr<attnscope::Model> model);
  /// Head B of the Compare view from this model's run of the same text (a quantized file against
  /// its original); nullopt: B from the main model again. Runs while the Compare view is open.
  void setCompareModel(const std::optional<attnscope::ModelSpec>& spec);
  void setRunOptions(const attnscope::gui::RunOptions& options);
  void setViewState(const attnscope::render::ViewState& state);
  void setCurrentView(attnscope::render::ViewKind kind);
  void selectHead(int layer, int head);
  void selectItem(int item);
  /// The next (delta 1) or previous (-1) batch item of the current result, wrapping around.
  void stepItem(int delta);
  void stepHead(int delta);
  void stepLayer(int delta);
  /// Starts a computation now instead of after the debounce.
  void recompute();
  /// Ablates every head (or estimates it, in one pass) for the selected batch item of the current
  /// result, with the model and request that made it. Does nothing without a result or while an
  /// ablation runs. A new text, model or run option cancels it and clears its map.
  void runAblation(bool estimate);
  /// Stops a running ablation; it ends as Cancelled when the worker has stopped.
  void cancelAblation();
  /// Appends the generated text to its prompt in the text box ("Keep as text"); the generation
  /// is then discarded, as after any edit.
  void keepGeneratedText();

 Q_SIGNALS:
  void textChanged(const QString& text);
  void modelSpecChanged(const attnscope::ModelSpec& spec);
  void runOptionsChanged(const attnscope::gui::RunOptions& options);
  void viewStateChanged(const attnscope::render::ViewState& state);
  void currentViewChanged(attnscope::render::ViewKind kind);
  /// A new result for the latest edit; the previous one stays current while an error is shown.
  void resultChanged(const attnscope::render::ResultPtr& result);
  /// The second model's result for the Compare view; null when cleared or failed.
  void compareResultChanged(const attnscope::render::ResultPtr& result);
  /// The message for the banner; empty when the last computation succeeded.
  void errorChanged(const QString& message);
  void busyChanged(bool busy);
  /// The running computation for the latest edit has `done` of `total` layers.
  void computeProgress(int done, int total);
  void modelInfoChanged(const attnscope::ModelInfo& info);
  void sessionPathChanged(const QString& path);
  void modifiedChanged(bool modified);
  /// memoryEstimate() or memoryLimitBytes() changed.
  void memoryEstimateChanged();
  /// Emitted once per computation that was actually started (tests count these).
  void computeStarted(quint64 generation);
  /// Internal: queued to the worker thread.
  void computeRequested(const attnscope::gui::ComputeJob& job);
  /// ablation() changed: started, a head done, finished, failed, cancelled or cleared.
  void ablationChanged(const attnscope::render::AblationStatus& status);
  /// `done` of `total` heads of the running ablation, in order.
  void ablationProgress(int done, int total);
  /// Internal: queued to the worker thread.
  void ablationRequested(const attnscope::gui::AblationJob& job);

 private:
  void scheduleRecompute();
  void recomputeIfLayerMissing();
  void onComputed(const attnscope::gui::ComputeOutcome& outcome);
  /// Runs the Compare view's second model on the last result's request, when it is shown.
  void runCompareModel();
  void onPreview(quint64 generation, const attnscope::render::ResultPtr& preview);
  void onAblationProgress(quint64 generation, int done, int total);
  void onAblated(const attnscope::gui::AblationOutcome& outcome);
  /// What a computation of the current text, model and options would run (no generation, no
  /// cancel flag, no limits).
  ComputeJob currentInput(const QStringList& items) const;
  /// Cancels and clears the ablation unless it was made from the same input as `input`.
  void dropAblationUnlessFor(const ComputeJob& input);
  void setAblation(const render::AblationStatus& status);
  /// Makes `spec` the model, and the inputs kept for it (pair, target) the run options: those of
  /// the model left behind are kept for it, never applied to the new one.
  void switchModel(const ModelSpec& spec);
  /// After a model that failed to open: back to the last one that opened, as if never chosen.
  void revertFailedModel(const QString& error);
  /// A session may carry a pair or a target for a model that reads neither: they are turned off
  /// (the worker has already run without them).
  void turnOffInputsTheModelIgnores(const ModelInfo& info);
  /// Other edits during a model trial: the revert must leave the document modified.
  void noteEditDuringTrial();
  /// Supersedes any running job: a new generation, the old job's cancel flag set.
  quint64 nextGeneration();
  void setError(const QString& message);
  void setBusy(bool busy);
  /// Makes shownResult() the selected generation step's and pins its new row; `announce`: emits
  /// resultChanged (and viewStateChanged) when what the views show changed.
  void showGenerationStep(bool announce);
  /// Keeps the selection inside the result's layers, heads, items and queries.
  render::ViewState clampedToResult(render::ViewState state) const;

  QString m_text;
  QString m_sessionPath;
  bool m_modified = false;
  ModelSpec m_spec;
  RunOptions m_run;
  render::ViewState m_view;
  render::ViewKind m_currentView = render::ViewKind::Heatmap;
  render::ResultPtr m_result;
  QStringList m_resultTexts;
  QStringList m_pendingTexts;  // of the job in flight
  QString m_error;
  QStringList m_workerNotices;
  render::ResultPtr m_stepResult;  // the selected generation step's forward (shownResult()); at
                                   // step 0 the prompt's run itself
  std::shared_ptr<const GenerationStep> m_stepShown;  // the step m_stepResult is for
  QString m_stepNotice;
  std::string m_memorySource;  // "memory:<name>" of m_memoryModel
  std::shared_ptr<Model> m_memoryModel;
  std::optional<ModelInfo> m_modelInfo;
  /// The inputs only some models read, per model source: the sentence pair (encoders), the target
  /// and generated tokens (encoder-decoders).
  struct ModelInputs {
    bool usePair = false;
    QString pair;
    bool useTarget = false;
    QString target;
    int generate = 0;
  };
  QHash<QString, ModelInputs> m_inputsByModel;
  std::optional<ModelSpec> m_openedSpec;      // the last model that opened (a run got that far)
  std::optional<bool> m_modifiedBeforeTrial;  // set while a newly chosen model has not opened yet
  bool m_busy = false;
  uint64_t m_scoresLimitBytes = ComputeJob().scoresLimitBytes;
  uint64_t m_memoryLimitBytes = RunLimits().memoryLimitBytes;
  MemoryEstimate m_estimate;
  double m_computeMs = 0;
  std::optional<ComputeJob> m_pendingJob;  // of the job in flight, without its cancel flag
  std::optional<ComputeJob> m_resultJob;   // what made m_result

  render::AblationStatus m_ablation;
  ComputeJob m_ablationInput;  // what made the result that was ablated
  quint64 m_ablationGeneration = 0;
  std::shared_ptr<std::atomic<bool>> m_ablationCancel;

  GenerationController* m_generator = nullptr;
  SecondModelRunner* m_compareRunner = nullptr;  // made when a second model is first chosen
  std::optional<attnscope::ModelSpec> m_compareSpec;
  render::ResultPtr m_compareResult;
  QString m_compareError;
  QString m_generationError;  // the banner's message when a generation step failed

  quint64 m_generation = 0;
  std::shared_ptr<std::atomic<quint64>>
      m_latestGeneration;  // read by the worker to skip stale jobs
  std::shared_ptr<std::atomic<bool>> m_cancelCurrent;
  QTimer m_debounce;
  QThread* m_thread = nullptr;
  ComputeWorker* m_worker = nullptr;  // lives on m_thread, deleted when it finishes
};

}  // namespace attnscope::gui
