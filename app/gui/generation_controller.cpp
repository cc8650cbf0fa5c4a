// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation_controller.h"

#include <algorithm>
#include <memory>

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

render::ResultPtr GenerationController::stepResult(const render::ResultPtr& prompt, int item,
                                                   uint64_t maxBytes, QString* why) const {
  if (!prompt || m_selected < 0 || m_selected >= stepCount() || prompt->groups.empty())
    return nullptr;
  const AttentionGroup& g = prompt->groups.front();
  const auto T0 = static_cast<int64_t>(m_promptTokens.size());
  if (!g.contextTokens.empty() || item < 0 || item >= g.batch() || g.attention.rank() != 5 ||
      g.tokens.size() != static_cast<std::size_t>(g.batch()) ||
      g.queryLengths.size() != g.tokens.size() || g.keyLengths.size() != g.tokens.size())
    return nullptr;
  const std::vector<Token>& tokens = g.tokens[static_cast<std::size_t>(item)];
  if (static_cast<int64_t>(tokens.size()) != T0 ||
      !std::equal(tokens.begin(), tokens.end(), m_promptTokens.begin(),
                  [](const Token& a, const Token& b) { return a.id == b.id; }))
    return nullptr;
  if (m_selected == 0) return prompt;  // the prompt's forward chose token 0
  const int64_t S = g.attention.dim(0), B = g.attention.dim(1), H = g.attention.dim(2);
  const int64_t Tq = g.attention.dim(3), Tk = g.attention.dim(4);
  const int64_t K = m_selected, T = T0 + K;
  for (int64_t s = 1; s <= K; ++s) {
    const FloatTensor& a = m_steps[static_cast<std::size_t>(s)]->attention;
    if (a.rank() != 3 || a.dim(0) != g.layers() || a.dim(1) != H || a.dim(2) != T0 + s)
      return nullptr;  // rows not kept, or another model's
  }
  const int64_t Tn = std::max(Tq, T), Tkn = std::max(Tk, T);
  const double bytes = 4.0 * static_cast<double>(S * B * H) * static_cast<double>(Tn * Tkn);
  if (bytes > static_cast<double>(maxBytes)) {
    if (why)
      *why = tr("The views other than Step show the prompt's attention: at step %1 the attention "
                "of %2 tokens would take %3 MB, more than the memory limit leaves (Edit › Memory "
                "Limit).")
                 .arg(K)
                 .arg(T)
                 .arg(bytes / (1024.0 * 1024.0), 0, 'f', 0);
    return nullptr;
  }
  auto r = std::make_shared<AttentionResult>();
  r->modelName = prompt->modelName;
  r->device = prompt->device;
  r->timings = prompt->timings;
  AttentionGroup& out = r->groups.emplace_back();
  out.name = g.name;
  out.distribution = g.distribution;
  out.kvHeads = g.kvHeads;
  out.tokens = g.tokens;
  out.queryLengths = g.queryLengths;
  out.keyLengths = g.keyLengths;
  out.keptLayers = g.keptLayers;
  out.modelLayers = g.modelLayers;
  auto& itemTokens = out.tokens[static_cast<std::size_t>(item)];
  for (int64_t s = 0; s < K; ++s) itemTokens.push_back(m_steps[static_cast<std::size_t>(s)]->token);
  out.queryLengths[static_cast<std::size_t>(item)] = static_cast<int>(T);
  out.keyLengths[static_cast<std::size_t>(item)] = static_cast<int>(T);
  out.attention = FloatTensor({S, B, H, Tn, Tkn});
  const float* from = g.attention.data.data();
  float* to = out.attention.data.data();
  for (int64_t l = 0; l < S; ++l) {
    const int64_t layer = g.keptLayers.empty() ? l : g.keptLayers[static_cast<std::size_t>(l)];
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        const float* src = from + ((l * B + b) * H + h) * Tq * Tk;
        float* dst = to + ((l * B + b) * H + h) * Tn * Tkn;
        for (int64_t q = 0; q < Tq; ++q) std::copy_n(src + q * Tk, Tk, dst + q * Tkn);
        if (b != item) continue;
        // Step s's row: query T0 + s - 1 over the T0 + s keys up to it.
        for (int64_t s = 1; s <= K; ++s) {
          const float* row = m_steps[static_cast<std::size_t>(s)]->attention.data.data() +
                             (layer * H + h) * (T0 + s);
          std::copy_n(row, T0 + s, dst + (T0 + s - 1) * Tkn);
        }
      }
    }
  }
  // After the last row: what step K's distribution was.
  r->nextTokens = prompt->nextTokens;
  std::vector<Prediction> next;
  for (const GenerationCandidate& c : m_steps[static_cast<std::size_t>(K)]->candidates)
    next.push_back({c.token, static_cast<float>(c.pModel)});
  if (static_cast<std::size_t>(item) < r->nextTokens.size())
    r->nextTokens[static_cast<std::size_t>(item)] = next;
  if (item == 0) r->nextToken = next;
  return r;
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
