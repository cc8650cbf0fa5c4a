// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "attnscope/sampling.h"
#include "generation_frame.h"
#include "generation_job.h"
#include "view_state.h"

namespace attnscope::gui {

/// What the Generate bar sets: how many tokens, and how each is chosen.
struct GenerationSettings {
  int maxNewTokens = 20;
  SamplingOptions sampling;  // temperature 0: greedy
  bool operator==(const GenerationSettings& o) const {
    return maxNewTokens == o.maxNewTokens && sampling.temperature == o.sampling.temperature &&
           sampling.topK == o.sampling.topK && sampling.topP == o.sampling.topP &&
           sampling.repetitionPenalty == o.sampling.repetitionPenalty &&
           sampling.seed == o.sampling.seed;
  }
  bool operator!=(const GenerationSettings& o) const { return !(*this == o); }
};

/// The document's generation: the prompt, the steps so far and the selected one, and the intents
/// of the Generate bar (Step, Play/Pause, Stop, force a candidate, select a step). Each step is
/// one job on the document's worker thread; the next is sent only when the last has come back,
/// so Pause and Stop take effect at once and the window never waits. Stop also sets the running
/// step's cancel flag, which the core polls between layers. Owned by the Document, which gives
/// it the model and limits (`base`) and discards the generation when the text or model changes.
class GenerationController final : public QObject {
  Q_OBJECT
 public:
  /// A job with spec, model, limits and the prompt (request.text) filled in; an empty prompt
  /// means there is nothing to generate from.
  using JobBase = std::function<GenerationJob()>;
  explicit GenerationController(JobBase base, QObject* parent = nullptr);
  ~GenerationController() override;

  const GenerationSettings& settings() const { return m_settings; }
  /// The prompt of the current generation (empty before the first step).
  const QString& prompt() const { return m_prompt; }
  const std::vector<Token>& promptTokens() const { return m_promptTokens; }
  const std::vector<std::shared_ptr<const GenerationStep>>& steps() const { return m_steps; }
  int stepCount() const { return static_cast<int>(m_steps.size()); }
  /// The selected step's index, -1 when there is none.
  int selectedStep() const { return m_selected; }
  bool isPlaying() const { return m_playing; }
  /// Whether a step is in the worker.
  bool isRunning() const { return m_running; }
  /// Whether another step may be asked for: below N, not at the end or the model's limit.
  bool canContinue() const;
  /// The generated tokens' text (special tokens by their label).
  QString generatedText() const;
  /// The selected step for the Step view.
  render::GenerationFrame frame() const;
  /// What every other view shows at the selected step K: the attention of the forward over the
  /// prompt and the first K generated tokens, whose last row is the query that chose token K.
  /// Causal attention of a position does not change when tokens are appended, so that forward's
  /// rows are `prompt`'s (the run over the prompt, batch item `item`) followed by the rows steps
  /// 1..K kept (GenerationStep::attention): exact, and nothing runs again. Only the attention
  /// group is made: scores, value norms, queries and keys and the logit lens exist for the
  /// prompt's run only. `prompt` itself at step 0; null when no step is selected, when `prompt`
  /// is not this generation's prompt (another text, or a batch item whose tokens differ), or
  /// when the attention would take more than maxBytes (*why then says so).
  render::ResultPtr stepResult(const render::ResultPtr& prompt, int item, uint64_t maxBytes,
                               QString* why = nullptr) const;
  /// The last step's wall time in the worker (ms), replays included.
  double lastStepMs() const { return m_lastMs; }
  /// The pace of Play: at least this long between tokens (ms).
  void setPlayInterval(int ms) { m_playInterval = ms; }

 public Q_SLOTS:
  void setSettings(const attnscope::gui::GenerationSettings& settings);
  /// One more token (or the first one after the prompt).
  void step();
  /// Steps until N tokens, the end token or the model's limit, at the play interval.
  void play();
  void pause();
  /// Pauses and abandons the running step (its cancel flag is set); the steps so far stay.
  void stop();
  void selectStep(int index);
  /// Cuts the generation back to step `index` and takes `id` there instead, then plays on.
  void force(int index, qint64 id);
  /// Forgets the generation (the text or the model changed).
  void discard();

 Q_SIGNALS:
  /// The steps changed: one added, cut back or all discarded.
  void stepsChanged();
  void selectedStepChanged(int index);
  /// isPlaying() or isRunning() changed.
  void stateChanged();
  /// A step failed: the core's message (not for a stop).
  void failed(const QString& message);
  /// A step succeeded after a failure: the banner may clear.
  void succeeded();
  /// Internal: queued to the worker thread.
  void stepRequested(const attnscope::gui::GenerationJob& job);

 public:
  /// From the worker (queued): the step's outcome.
  void onStepped(const attnscope::gui::GenerationOutcome& outcome);

 private:
  void requestStep(std::optional<int64_t> forced);
  void setPlaying(bool playing);
  void setRunning(bool running);
  /// A new id and cancel flag: whatever the worker still sends for the old ones is dropped.
  void abandonRunning();

  JobBase m_base;
  GenerationSettings m_settings;
  QString m_prompt;
  GenerationJob m_job;  // the base of the current generation (m_prompt's)
  std::vector<Token> m_promptTokens;
  std::vector<std::shared_ptr<const GenerationStep>> m_steps;
  int m_selected = -1;
  bool m_playing = false;
  bool m_running = false;
  bool m_atEnd = false;  // the end token, or the model cannot step further
  bool m_failedLast = false;
  double m_lastMs = 0;
  int m_playInterval = 250;
  quint64 m_id = 0;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  QTimer m_pace;
  QElapsedTimer m_sent;
};

}  // namespace attnscope::gui

Q_DECLARE_METATYPE(attnscope::gui::GenerationSettings)
