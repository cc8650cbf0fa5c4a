// SPDX-License-Identifier: GPL-3.0-or-later
#include "compute_worker.h"

#include <QElapsedTimer>

#include <algorithm>
#include <exception>

#include "attnscope/value_weighted_norms.h"
#include "model_spec_equal.h"

namespace attnscope::gui {

namespace {

// `count` layers of `layers`: the focus layers first, then their neighbours, nearest first.
std::vector<int> layersAround(const std::vector<int>& focus, int count, int layers) {
  std::vector<bool> chosen(static_cast<std::size_t>(layers), false);
  int n = 0;
  const auto take = [&](int l) {
    if (l < 0 || l >= layers || n >= count || chosen[static_cast<std::size_t>(l)]) return;
    chosen[static_cast<std::size_t>(l)] = true;
    ++n;
  };
  for (int l : focus) take(l);
  const int centre = focus.empty() ? 0 : std::clamp(focus.front(), 0, layers - 1);
  for (int d = 1; n < count && d < layers; ++d) {
    take(centre + d);
    take(centre - d);
  }
  std::vector<int> out;
  for (int l = 0; l < layers; ++l) {
    if (chosen[static_cast<std::size_t>(l)]) out.push_back(l);
  }
  return out;
}

// The message and kind of the exception thrown while running the core, for the banner.
void describeError(std::exception_ptr thrown, QString* message, ErrorKind* kind) {
  try {
    std::rethrow_exception(thrown);
  } catch (const Error& e) {
    *message = QString::fromStdString(e.what());
    *kind = e.kind();
  } catch (const std::bad_alloc&) {
    *message = ComputeWorker::tr("out of memory: choose a smaller model or shorter text");
    *kind = ErrorKind::ResourceLimit;
  } catch (const std::exception& e) {
    // The core wraps library failures in Error; anything else is a bug, shown rather than fatal.
    *message = ComputeWorker::tr("internal error: %1").arg(QString::fromStdString(e.what()));
    *kind = ErrorKind::Internal;
  } catch (...) {
    *message = ComputeWorker::tr("internal error: an unknown exception");
    *kind = ErrorKind::Internal;
  }
}

}  // namespace

QString ComputeWorker::layerRanges(const std::vector<int>& layers) {
  QStringList parts;
  for (std::size_t i = 0; i < layers.size();) {
    std::size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    parts << (j == i ? QString::number(layers[i])
                     : QStringLiteral("%1–%2").arg(layers[i]).arg(layers[j]));
    i = j + 1;
  }
  return parts.join(QStringLiteral(", "));
}

QString ComputeWorker::formatBytes(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return mib >= 1024 ? tr("%1 GiB").arg(mib / 1024, 0, 'f', 1) : tr("%1 MiB").arg(mib, 0, 'f', 0);
}

ComputeWorker::ComputeWorker(std::shared_ptr<const std::atomic<quint64>> latestGeneration,
                             QObject* parent)
    : QObject(parent), m_latest(std::move(latestGeneration)) {}

bool ComputeWorker::needsModel(const ModelSpec& spec, const std::shared_ptr<Model>& model) const {
  return model ? model != m_model : !m_model || !sameModelSpec(m_modelSpec, spec);
}

bool ComputeWorker::useModel(const ModelSpec& spec, const std::shared_ptr<Model>& model) {
  if (!needsModel(spec, model)) return false;
  if (model) {
    m_model = model;
  } else {
    m_model.reset();  // free the old weights before allocating the new ones
    m_model = openModel(spec);
  }
  m_modelSpec = spec;
  return true;
}

void ComputeWorker::fitToModel(RunRequest& request) const {
  if ((request.target || request.generate > 0) && !m_model->info().encoderDecoder()) {
    // The panel offers them for encoder-decoders only; a session may still carry them.
    request.target.reset();
    request.generate = 0;
  }
  // A session may carry a pair for a model that reads one sentence: the document turns it off
  // when this outcome's model info arrives (the pair box is hidden for such models).
  if (request.pair && !m_model->info().supportsPair) request.pair.reset();
  // The Q/K view reads them: about d_model floats per token and layer, small beside attention.
  request.keepQueryKey = true;
  // Value-weighted norms: [L, B, H, T] during the run, then one more attention-sized group.
  request.keepValueNorms = m_model->info().supportsValueNorms;
  // DeBERTa's c2c, c2p and p2c for the heatmap's scores view: as much again as the scores each.
  request.keepScoreTerms = request.keepScores && !m_model->info().scoreTerms.empty();
  // The logit lens view asks for it (Document::recompute); encoders and encoder-decoders have no
  // next-token head to apply to their layers, and the view says so.
  const ModelInfo info = m_model->info();
  if (!info.causal || info.encoderDecoder()) request.logitLens = 0;
  // The token limit follows the model's own context (a 32,768-token model takes 32,768 tokens):
  // the memory estimate, with attention on demand, decides what fits.
  request.limits.maxTokens = std::max(request.limits.maxTokens, info.maxPositions);
}

MemoryEstimate ComputeWorker::fitToMemory(const ComputeJob& job, RunRequest& request,
                                          ComputeOutcome& outcome) const {
  // From the configuration and the tokens: nothing large exists yet.
  MemoryEstimate estimate = m_model->estimate(request);
  const uint64_t attentionBytes = estimate.attention;
  const uint64_t terms = m_model->info().scoreTerms.size();
  if (request.keepScoreTerms && attentionBytes * (1 + terms) > job.scoresLimitBytes) {
    // DeBERTa's c2c, c2p and p2c: each as large as the attention.
    request.keepScoreTerms = false;
    outcome.notices << tr("The terms of the scores are not kept for this input: they would take "
                          "%1 MB beside the attention.")
                           .arg(attentionBytes * terms / (1024 * 1024));
    estimate = m_model->estimate(request);
  }
  if (request.keepScores && attentionBytes > job.scoresLimitBytes) {
    request.keepScores = false;
    request.keepScoreTerms = false;
    outcome.notices << tr("Scores are not kept for this input: the attention weights alone take "
                          "%1 MB, and keeping the scores too would double that.")
                           .arg(attentionBytes / (1024 * 1024));
    estimate = m_model->estimate(request);
  }
  const uint64_t limit = request.limits.memoryLimitBytes;
  // How many layers' attention would fit stored (the fallback below keeps those around the one
  // on screen, with every view: scores, value norms, the Q/K vectors).
  const uint64_t fixedPart = estimate.total - estimate.attention - estimate.scores;
  const uint64_t storedFit =
      estimate.perLayer > 0 && fixedPart < limit ? (limit - fixedPart) / estimate.perLayer : 0;
  if (estimate.total > limit && !request.attentionOnDemand &&
      2 * storedFit < static_cast<uint64_t>(estimate.layers)) {
    // Not even half the layers' attention fits: keep, per layer, what any head's weights are
    // recomputed from (AttentionGroup::source) when that fits, rather than drop most layers.
    // The views recompute what they show; scores, value norms, q/k vectors and score terms are
    // not kept. (With half the layers or more stored, those layers keep every view.)
    RunRequest onDemand = request;
    onDemand.attentionOnDemand = true;
    onDemand.keepScores = false;
    onDemand.keepScoreTerms = false;
    onDemand.keepQueryKey = false;
    onDemand.keepValueNorms = false;
    onDemand.layers.clear();
    const MemoryEstimate kept = m_model->estimate(onDemand);
    if (kept.total <= limit) {
      const uint64_t stored = estimate.attention + estimate.scores;
      request = onDemand;
      outcome.notices.prepend(
          tr("Attention recomputed on demand: %1 kept instead of %2 (over the memory limit of "
             "%3, Edit › Memory Limit). The views recompute the cells they show; scores, "
             "value-weighted norms and the Q/K vectors are not kept.")
              .arg(formatBytes(kept.attention), formatBytes(stored), formatBytes(limit)));
      return kept;
    }
  }
  const uint64_t fixed = estimate.total - estimate.attention - estimate.scores;
  if (estimate.total > limit && estimate.perLayer > 0 && estimate.layers > 1 && fixed < limit) {
    // Every layer is computed, but only as many as fit are kept: the ones on screen and their
    // neighbours. Opening another layer runs again keeping that one (Document::setViewState).
    const uint64_t fit = std::min<uint64_t>((limit - fixed) / estimate.perLayer,
                                            static_cast<uint64_t>(estimate.layers - 1));
    if (fit >= 1) {
      const uint64_t whole = estimate.total;
      request.layers = layersAround(job.focusLayers, static_cast<int>(fit), estimate.layers);
      estimate = m_model->estimate(request);
      // First: the banner's one line must say what is missing from the views.
      const QString kept = request.layers.size() == 1
                               ? tr("layer %1 only").arg(request.layers.front())
                               : tr("layers %1").arg(layerRanges(request.layers));
      outcome.notices.prepend(
          tr("Attention kept for %1 of %2: all %2 layers would need %3, "
             "over the memory limit of %4 (Edit › Memory Limit). Every layer is "
             "computed; opening another one computes its attention again.")
              .arg(kept)
              .arg(estimate.layers)
              .arg(formatBytes(whole), formatBytes(limit)));
    }
  }
  // Shown like attention (the Attention selector), so it costs as much again: only when that
  // fits, and not for long inputs to big models, where a second copy would cost seconds.
  constexpr uint64_t kMaxNormBytes = 256ull << 20;
  const bool showNorms = request.keepValueNorms && request.layers.empty() &&
                         estimate.attention <= kMaxNormBytes &&
                         estimate.total + estimate.attention <= limit;
  request.keepValueNorms = showNorms;
  if (!showNorms) estimate = m_model->estimate(request);
  return estimate;
}

AttentionResult ComputeWorker::runWithLens(const RunRequest& request,
                                           ComputeOutcome& outcome) const {
  if (request.logitLens <= 0) return m_model->run(request);
  try {
    return m_model->run(request);
  } catch (const Error& e) {
    // A decoder without a language-model head, or a lens over the memory limit: the core refuses
    // the lens before any layer runs, so the other views get their result at once and the banner
    // says why the lens is missing (a run that does not fit without it fails as before).
    if (e.kind() != ErrorKind::InvalidArgument && e.kind() != ErrorKind::ResourceLimit) throw;
    RunRequest without = request;
    without.logitLens = 0;
    AttentionResult r = m_model->run(without);
    outcome.notices << tr("No logit lens: %1").arg(QString::fromStdString(e.what()));
    return r;
  }
}

void ComputeWorker::compute(const ComputeJob& job) {
  // Typing queues a job per debounce; only the newest one is worth the time.
  if (job.generation < m_latest->load()) return;

  QElapsedTimer timer;
  timer.start();
  ComputeOutcome outcome;
  outcome.generation = job.generation;
  bool opening = false;
  try {
    opening = needsModel(job.spec, job.model) && !job.model;
    if (useModel(job.spec, job.model)) outcome.modelInfo = m_model->info();
    opening = false;
    RunRequest request = job.request;
    fitToModel(request);
    const MemoryEstimate estimate = fitToMemory(job, request, outcome);
    outcome.estimate = estimate;
    outcome.memoryLimitBytes = request.limits.memoryLimitBytes;
    const quint64 generation = job.generation;
    request.progress = [this, generation](int done, int total) {
      Q_EMIT computeProgress(generation, done, total);
    };
    // A long run shows its first layer as soon as it is done. Short ones (the bundled tiny GPT at
    // every keystroke) end before a second repaint would help.
    constexpr uint64_t kPreviewFromBytes = 8ull << 20;
    if (estimate.attention >= kPreviewFromBytes && estimate.layers > 1) {
      request.preview = [this, generation](AttentionResult preview) {
        Q_EMIT computePreview(generation,
                              std::make_shared<const AttentionResult>(std::move(preview)));
      };
    }
    auto result = std::make_shared<AttentionResult>(runWithLens(request, outcome));
    if (request.keepValueNorms) {
      AttentionGroup& main = result->group();
      AttentionGroup norms = valueNormGroup(main);
      main.valueNorms = FloatTensor();  // the group holds them now, weighted
      result->groups.push_back(std::move(norms));
    }
    outcome.result = std::move(result);
  } catch (...) {
    describeError(std::current_exception(), &outcome.error, &outcome.errorKind);
  }
  if (opening) {
    outcome.openFailed = true;
    outcome.error = tr("Could not open the model: %1").arg(outcome.error);
  }
  outcome.computeMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  Q_EMIT computed(outcome);
}

void ComputeWorker::ablate(const AblationJob& job) {
  AblationOutcome outcome;
  outcome.generation = job.generation;
  try {
    // Superseded before it started: not worth opening a model for.
    if (job.cancel && job.cancel->load() && needsModel(job.spec, job.model))
      throw Error(ErrorKind::Cancelled, "cancelled");
    useModel(job.spec, job.model);
    AblationRequest request = job.request;
    if (request.run.pair && !m_model->info().supportsPair) request.run.pair.reset();
    const quint64 generation = job.generation;
    // Called on this thread; the queued connection carries it to the document.
    request.progress = [this, generation](int done, int total) {
      Q_EMIT ablationProgress(generation, done, total);
    };
    outcome.ablation = std::make_shared<const HeadAblation>(m_model->ablateHeads(request));
  } catch (...) {
    describeError(std::current_exception(), &outcome.error, &outcome.errorKind);
  }
  Q_EMIT ablated(outcome);
}

void ComputeWorker::generateStep(const GenerationJob& job) {
  GenerationOutcome outcome;
  outcome.id = job.id;
  outcome.index = static_cast<int>(job.generated.size());
  QElapsedTimer timer;
  timer.start();
  try {
    if (job.cancel && job.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
    useModel(job.spec, job.model);
    // The kept generation continues only if it is this one and holds exactly the tokens the
    // document has: a cut back (a forced candidate) or a stop inside a step starts it again.
    bool same = m_generation && m_generationId == job.id && m_generationModel == m_model;
    if (same) {
      const std::vector<Token>& tokens = m_generation->tokens();
      const auto prompt = static_cast<std::size_t>(m_generation->promptLength());
      same = tokens.size() == prompt + job.generated.size();
      for (std::size_t i = 0; same && i < job.generated.size(); ++i)
        same = tokens[prompt + i].id == job.generated[i];
    }
    if (!same) {
      m_generation.reset();
      GenerationRequest request = job.request;
      request.cancel = job.cancel.get();
      m_generationModel = m_model;
      m_generationCancel = job.cancel;
      m_generationId = job.id;
      m_generation = m_model->startGeneration(request);
      // Forced tokens rebuild the same cache; their steps were reported before.
      StepOptions replay;
      for (int64_t id : job.generated) {
        replay.forcedId = id;
        m_generation->step(replay);
      }
    }
    const int prompt = m_generation->promptLength();
    outcome.promptTokens.assign(m_generation->tokens().begin(),
                                m_generation->tokens().begin() + prompt);
    outcome.step = std::make_shared<const GenerationStep>(m_generation->step(job.options));
    outcome.canStep = m_generation->canStep();
  } catch (...) {
    // A step stopped half way leaves the cache unusable: the next job starts again.
    m_generation.reset();
    describeError(std::current_exception(), &outcome.error, &outcome.errorKind);
  }
  outcome.milliseconds = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  Q_EMIT generated(outcome);
}

}  // namespace attnscope::gui
