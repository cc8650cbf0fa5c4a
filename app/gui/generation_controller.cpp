// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation_controller.h"

#include <algorithm>

namespace attnscope::gui {

namespace {

// The candidates a step reports: enough for the probabilities panel to show the close calls.
constexpr int kStepCandidates = 10;

QString generatedPiece(const Token& t) {
  return QString::fromStdString(t.special ? t.label : t.text);
}

}  // namespace

GenerationController::GenerationController(JobBase base, QObject* parent)
    : QObject(parent), m_base(std::move(base)) {
  m_pace.setSingleShot(true);
  connect(&m_pace, &QTimer::timeout, this, [this] {
    if (m_playing && !m_running && canContinue()) requestStep(std::nullopt);
  });
}

GenerationController::~GenerationController() {
  if (m_cancel) m_cancel->store(true);
}

bool GenerationController::canContinue() const {
  return !m_atEnd && stepCount() < m_settings.maxNewTokens;
}

QString GenerationController::generatedText() const {
  QString text;
  for (const auto& s : m_steps) text += generatedPiece(s->token);
  return text;
}

render::GenerationFrame GenerationController::frame() const {
  render::GenerationFrame f;
  f.count = stepCount();
  f.promptLength = static_cast<int>(m_promptTokens.size());
  if (m_selected < 0 || m_selected >= stepCount()) return f;
  f.index = m_selected;
  f.step = m_steps[static_cast<std::size_t>(m_selected)];
  f.tokens = m_promptTokens;
  for (int i = 0; i <= m_selected; ++i)
    f.tokens.push_back(m_steps[static_cast<std::size_t>(i)]->token);
  return f;
}

void GenerationController::setSettings(const GenerationSettings& settings) {
  if (settings == m_settings) return;
  m_settings = settings;
  // More room after the end of N: a paused generation may go on; the end token stays the end.
  if (m_playing && !canContinue()) setPlaying(false);
}

void GenerationController::step() {
  if (m_running || !canContinue()) return;
  requestStep(std::nullopt);
}

void GenerationController::play() {
  if (m_playing || !canContinue()) return;
  setPlaying(true);
  if (!m_running) requestStep(std::nullopt);
}

void GenerationController::pause() {
  m_pace.stop();
  setPlaying(false);
}

void GenerationController::stop() {
  pause();
  if (m_running) {
    abandonRunning();
    setRunning(false);
  }
}

void GenerationController::selectStep(int index) {
  index = m_steps.empty() ? -1 : std::clamp(index, 0, stepCount() - 1);
  if (index == m_selected) return;
  m_selected = index;
  Q_EMIT selectedStepChanged(m_selected);
}

void GenerationController::force(int index, qint64 id) {
  if (index < 0 || index >= stepCount()) return;
  m_pace.stop();
  if (m_running) {
    abandonRunning();
    setRunning(false);
  }
  m_steps.resize(static_cast<std::size_t>(index));
  m_atEnd = false;
  m_selected = -1;
  Q_EMIT stepsChanged();
  // Continues to N from the forced token, like Play.
  setPlaying(true);
  requestStep(id);
}

void GenerationController::discard() {
  m_pace.stop();
  if (m_running) abandonRunning();
  const bool had = !m_steps.empty() || !m_prompt.isEmpty();
  m_steps.clear();
  m_promptTokens.clear();
  m_prompt.clear();
  m_atEnd = false;
  setRunning(false);
  setPlaying(false);
  if (m_selected != -1) {
    m_selected = -1;
    Q_EMIT selectedStepChanged(-1);
  }
  if (had) Q_EMIT stepsChanged();
}

void GenerationController::abandonRunning() {
  if (m_cancel) m_cancel->store(true);
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  ++m_id;
}

void GenerationController::requestStep(std::optional<int64_t> forced) {
  if (m_steps.empty() && !forced) {
    // A new generation: the prompt as it is now.
    m_job = m_base();
    if (m_job.request.text.empty()) {
      setPlaying(false);
      Q_EMIT failed(tr("Nothing to generate from: type a prompt first."));
      return;
    }
    m_prompt = QString::fromStdString(m_job.request.text);
    if (!m_cancel || m_cancel->load()) m_cancel = std::make_shared<std::atomic<bool>>(false);
    ++m_id;
  }
  GenerationJob job = m_job;
  job.id = m_id;
  job.cancel = m_cancel;
  job.request.maxNewTokens = std::max(m_settings.maxNewTokens, stepCount() + 1);
  job.request.keepAttention = true;
  job.request.candidates = kStepCandidates;
  for (const auto& s : m_steps) job.generated.push_back(s->token.id);
  job.options.sampling = m_settings.sampling;
  job.options.forcedId = forced;
  m_sent.start();
  setRunning(true);
  Q_EMIT stepRequested(job);
}

void GenerationController::onStepped(const GenerationOutcome& outcome) {
  if (outcome.id != m_id || !m_running ||
      outcome.index != stepCount())  // superseded: stopped, cut back or discarded meanwhile
    return;
  setRunning(false);
  m_lastMs = outcome.milliseconds;
  if (!outcome.step) {
    setPlaying(false);
    if (outcome.errorKind != ErrorKind::Cancelled) {
      m_failedLast = true;
      Q_EMIT failed(outcome.error);
    }
    return;
  }
  if (m_failedLast) {
    m_failedLast = false;
    Q_EMIT succeeded();
  }
  if (m_promptTokens.empty()) m_promptTokens = outcome.promptTokens;
  m_steps.push_back(outcome.step);
  m_atEnd = outcome.step->end || !outcome.canStep;
  m_selected = stepCount() - 1;  // the newest step, while it is being written
  Q_EMIT stepsChanged();
  Q_EMIT selectedStepChanged(m_selected);
  if (!m_playing) return;
  if (!canContinue()) {
    setPlaying(false);
    return;
  }
  // A readable pace: the rest of the interval since the step was sent, none when it was slower.
  const auto elapsed = static_cast<int>(m_sent.elapsed());
  m_pace.start(std::max(0, m_playInterval - elapsed));
}

void GenerationController::setPlaying(bool playing) {
  if (playing == m_playing) return;
  m_playing = playing;
  Q_EMIT stateChanged();
}

void GenerationController::setRunning(bool running) {
  if (running == m_running) return;
  m_running = running;
  Q_EMIT stateChanged();
}

}  // namespace attnscope::gui
