// SPDX-License-Identifier: GPL-3.0-or-later
#include <QApplication>
#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "ablation_view.h"
#include "alignment_view.h"
#include "arg_parser.h"
#include "attnscope/error.h"
#include "attnscope/value_weighted_norms.h"
#include "commands.h"
#include "compare_view.h"
#include "exporter.h"
#include "head_matrix.h"
#include "logit_lens_view.h"
#include "model_options.h"
#include "palette.h"
#include "step_view.h"
#include "view_factory.h"
#include "view_subject.h"

namespace attnscope::cli {
namespace {

// Qt's own debug, info and warning messages (QStandardPaths' runtime folder, libpng's warnings
// through Qt's PNG writer) are not the user's business in a command that reports its own errors
// in one line; critical and fatal ones still reach stderr. ATTNSCOPE_QT_MESSAGES=1 shows all.
void quietQtMessages(QtMsgType type, const QMessageLogContext&, const QString& message) {
  if (type == QtDebugMsg || type == QtInfoMsg || type == QtWarningMsg) return;
  std::fprintf(stderr, "%s\n", qPrintable(message));
}

// Rendering needs a QApplication (fonts, QCustomPlot widgets) but never a display.
std::unique_ptr<QApplication> startQt() {
  if (!qEnvironmentVariableIsSet("ATTNSCOPE_QT_MESSAGES")) qInstallMessageHandler(quietQtMessages);
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "attnscope-cli";
  static char* argv[] = {name, nullptr};
  return std::make_unique<QApplication>(argc, argv);
}

// "--layer 3 is out of range: the model has 2 layers (0..1)".
int indexFlag(const ArgParser& p, const std::string& flag, int fallback, int count,
              const char* noun) {
  if (!p.has(flag)) return fallback;
  const long long v = p.integer(flag, fallback, -(1ll << 40), 1ll << 40);
  if (v < 0 || v >= count) {
    throw UsageError(flag + " " + std::to_string(v) + " is out of range: the result has " +
                     std::to_string(count) + " " + noun + (count == 1 ? "" : "s") + " (valid 0.." +
                     std::to_string(count - 1) + ")");
  }
  return static_cast<int>(v);
}

// "all" or a comma-separated list of heads, each checked against the result.
std::vector<int> headList(const std::string& text, int heads) {
  std::vector<int> out;
  if (text == "all") {
    for (int h = 0; h < heads; ++h) out.push_back(h);
    return out;
  }
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v >= heads) {
      throw UsageError("--line-heads must be 'all' or heads 0.." + std::to_string(heads - 1) +
                       " separated by commas, got '" + text + "'");
    }
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) == out.end())
      out.push_back(static_cast<int>(v));
  }
  return out;
}

// --query/--key: a token position of the batch item, checked against its real length.
int tokenFlag(const ArgParser& p, const std::string& flag, int count) {
  return p.has(flag) ? indexFlag(p, flag, -1, count, "token") : -1;
}

// The flags of `export` besides the model flags.
void addExportFlags(ArgParser& p) {
  p.option("--view", "V",
           "heatmap (default), grid, compare, stats, pipeline, lines, text, qk, alignment "
           "(encoder-decoders: target tokens to their strongest source tokens), ablation, "
           "logit-lens (causal language models: each layer's predicted token at each position), "
           "experts (mixture-of-experts models: each token's experts at each layer) or step "
           "(a generated token's attention over the earlier ones, every layer and head)")
      .option("--step", "K",
              "step: the generated token shown, 0 for the first; the model writes K + 1 tokens "
              "after --text, greedily unless a sampling flag is given (as generate); default 0")
      .option("--model-b", "M",
              "compare: head B from this second model's run of the same text (e.g. the same "
              "model quantized), with every head's distance between the two in a table")
      .flag("--all-layers", "alignment: average over every layer, not the selected one")
      .option("--layer", "L", "layer of the head shown (A in compare); default 0")
      .option("--head", "H", "head shown (A in compare); default 0")
      .option("--batch-item", "B", "batch item shown; default 0")
      .option("--attention", "KIND",
              "self (default), value_norm (value-weighted norms ‖α·f(x)‖, Kobayashi et al.); "
              "encoder-decoders: decoder_self or cross")
      .option("--vs-layer", "L", "compare: layer of head B; default --layer")
      .option("--vs-head", "H",
              "compare: head B; default the head after --head (with --model-b: --head)")
      .option("--vs-batch-item", "B", "compare: batch item of B; default --batch-item")
      .option("--line-heads", "LIST", "lines: heads overlaid, 'all' or e.g. 0,3,5; default --head")
      .option("--threshold", "W", "lines: weights below W are not drawn; default 0.02")
      .option("--query", "LIST",
              "lines, text, qk, heatmap: the query token's position; default none (lines), "
              "the last token (text, qk). heatmap and text: several, e.g. 3,5-7, are combined "
              "(--aggregate)")
      .option("--aggregate", "A", "how several --query tokens combine: mean (default) or sum")
      .option("--key", "I", "qk: the key token's position; default the query's strongest key")
      .option("--source", "S",
              "text: colour by head (default), mean (over the layer's heads) or "
              "rollout (through --layer)")
      .option("--format", "F", "png, svg or pdf; default from --out's extension, else png")
      .option("--out", "FILE", "the file to write (required)")
      .option("--width", "W", "drawing width in logical pixels (1/96 inch); default 1200")
      .option("--height", "H", "drawing height; default 900")
      .option("--dpi", "N", "PNG resolution: pixels = size x dpi / 96; default 150")
      .option("--palette", "NAME", "viridis (default), magma, cividis or greyscale")
      .flag("--scores", "heatmap: pre-softmax scores instead of weights")
      .option("--score-term", "NAME",
              "with --scores: one term of the scores instead of their sum, for models whose "
              "scores are a sum of terms (DeBERTa: c2c, c2p, p2c)")
      .flag("--per-head-scale", "grid: scale each cell to its own maximum")
      .flag("--hide-special",
            "leave out [CLS]/[SEP]/<s>/</s> rows and columns and renormalise the rows")
      .flag("--merge-words",
            "one row and column per word instead of per subword token (columns summed, rows "
            "averaged)")
      .flag("--log-scale",
            "heatmap: colour the weights on a log scale (four decades below the head's largest)")
      .option("--drop-sink", "K",
              "heatmap: leave out the first K keys (an attention sink) and renormalise each row "
              "over the rest")
      .option("--statistic", "S",
              "stats: the chart, entropy (default), distance, max, prev, diag, first, sink (the "
              "share of weight on the first 4 tokens) or distance-profile (the selected layer's "
              "heads' weight by log-distance)")
      .flag("--classroom", "large fonts for projectors")
      .flag("--estimate", "ablation: the one-pass estimate (attribution patching), not exact")
      .option("--title", "TEXT", "title above the view; default describes the selection");
  addSamplingFlags(p, /*withSeed=*/false);
}

// What the flags ask for: the view, the file and how it is drawn.
struct ExportPlan {
  render::ViewKind kind = render::ViewKind::Heatmap;
  QString out;
  render::ExportOptions options;
  render::ViewState state;
};

// The view state's flags that need no result: palette, toggles, aggregate, threshold, source.
void parseStateFlags(const ArgParser& p, render::ViewState& state) {
  if (p.has("--palette")) {
    state.palette = QString::fromStdString(p.value("--palette")).toLower();
    if (!render::Palette::names().contains(state.palette)) {
      throw UsageError("--palette must be viridis, magma, cividis or greyscale, got '" +
                       p.value("--palette") + "'");
    }
  }
  state.showScores = p.has("--scores");
  if (p.has("--score-term")) {
    if (!state.showScores) throw UsageError("--score-term goes with --scores");
    state.scoreTerm = QString::fromStdString(p.value("--score-term"));
  }
  state.perHeadScale = p.has("--per-head-scale");
  state.hideSpecial = p.has("--hide-special");
  state.mergeWords = p.has("--merge-words");
  state.logScale = p.has("--log-scale");
  state.dropSink = static_cast<int>(p.integer("--drop-sink", 0, 0, 1 << 20));
  if (p.has("--aggregate") && !render::parseQueryAggregate(
                                  QString::fromStdString(p.value("--aggregate")), &state.aggregate))
    throw UsageError("--aggregate must be mean or sum, got '" + p.value("--aggregate") + "'");
  state.classroom = p.has("--classroom");
  state.lineThreshold = p.number("--threshold", 0.02, 0.0, 1.0);
  if (p.has("--source") &&
      !render::parseTextSource(QString::fromStdString(p.value("--source")), &state.textSource)) {
    throw UsageError("--source must be head, mean or rollout, got '" + p.value("--source") + "'");
  }
}

// Step 1, parse the options: everything that needs no model, so mistakes fail fast.
ExportPlan parseOptions(const ArgParser& p) {
  ExportPlan plan;
  if (p.has("--view") &&
      !render::parseViewKind(QString::fromStdString(p.value("--view")), &plan.kind)) {
    throw UsageError(
        "--view must be heatmap, grid, compare, stats, pipeline, lines, text, qk, alignment, "
        "ablation, logit-lens, experts or step, got '" +
        p.value("--view") + "'");
  }
  if (!p.has("--out")) throw UsageError("--out FILE is required");
  plan.out = QString::fromStdString(p.value("--out"));
  render::ExportOptions& options = plan.options;
  if (p.has("--format")) {
    if (!render::parseImageFormat(QString::fromStdString(p.value("--format")), &options.format)) {
      throw UsageError("--format must be png, svg or pdf, got '" + p.value("--format") + "'");
    }
  } else {
    render::parseImageFormat(QFileInfo(plan.out).suffix(), &options.format);
  }
  options.width = static_cast<int>(p.integer("--width", 1200, 16, 20000));
  options.height = static_cast<int>(p.integer("--height", 900, 16, 20000));
  options.dpi = static_cast<int>(p.integer("--dpi", 150, 24, 2400));
  parseStateFlags(p, plan.state);
  if (p.has("--statistic")) {
    if (plan.kind != render::ViewKind::Stats)
      throw UsageError("--statistic chooses the stats view's chart; use it with --view stats");
    plan.state.statistic = QString::fromStdString(p.value("--statistic"));
    if (render::statisticIndex(plan.state.statistic) < 0)
      throw UsageError("--statistic must be one of " +
                       render::statisticKeys().join(", ").toStdString() + ", got '" +
                       p.value("--statistic") + "'");
  }
  const QFileInfo outInfo(plan.out);
  const QFileInfo folder(outInfo.absolutePath());
  if (!folder.isDir() || !folder.isWritable()) {
    throw UsageError("--out " + p.value("--out") + ": folder " +
                     folder.absoluteFilePath().toStdString() +
                     " does not exist or is not writable");
  }
  if (outInfo.isDir())
    throw UsageError("--out " + p.value("--out") + " is a folder; give a file name");
  return plan;
}

// Step 3, run: the model on the flags' input; value norms become a group of their own.
std::shared_ptr<AttentionResult> runModel(Model& model, const RunRequest& request) {
  auto result = std::make_shared<AttentionResult>(model.run(request));
  if (request.keepValueNorms) result->groups.push_back(valueNormGroup(result->group()));
  for (const std::string& n : result->notices)
    std::fprintf(stderr, "notice: %s\n", printable(n).c_str());
  return result;
}

// The group, heads and tokens shown: flags that are checked against the result.
void selectFromResult(const ArgParser& p, const AttentionResult& result, ExportPlan& plan) {
  render::ViewState& state = plan.state;
  if (p.has("--attention")) {
    state.group = p.value("--attention");
    if (!result.findGroup(state.group)) {
      std::string kinds;
      for (const AttentionGroup& g : result.groups) kinds += (kinds.empty() ? "" : ", ") + g.name;
      throw UsageError("--attention " + state.group + ": " + result.modelName + " computes " +
                       kinds);
    }
  }
  // The alignment view reads the cross-attention: its layers are the decoder's.
  if (plan.kind == render::ViewKind::Alignment && !p.has("--attention") &&
      result.findGroup("cross"))
    state.group = "cross";
  const AttentionGroup& shown = result.group(state.group);
  state.layer = indexFlag(p, "--layer", 0, shown.layers(), "layer");
  state.head = indexFlag(p, "--head", 0, shown.heads(), "head");
  state.item = indexFlag(p, "--batch-item", 0, shown.batch(), "batch item");
  state.vsLayer = indexFlag(p, "--vs-layer", state.layer, shown.layers(), "layer");
  // Against another model (--model-b) B is the same head by default: what changed in it.
  state.vsHead =
      indexFlag(p, "--vs-head", p.has("--model-b") ? state.head : (state.head + 1) % shown.heads(),
                shown.heads(), "head");
  state.vsItem = indexFlag(p, "--vs-batch-item", state.item, shown.batch(), "batch item");
  if (p.has("--line-heads")) state.lineHeads = headList(p.value("--line-heads"), shown.heads());
  if (p.has("--query")) {
    const int count = render::realQueries(shown, state.item);
    const std::vector<int> queries = indexListFromFlag("--query", p.value("--query"), "token");
    if (queries.back() >= count) {
      throw UsageError("--query " + std::to_string(queries.back()) +
                       " is out of range: the result has " + std::to_string(count) + " token" +
                       (count == 1 ? "" : "s") + " (valid 0.." + std::to_string(count - 1) + ")");
    }
    state.pinnedQuery = queries.back();
    if (queries.size() > 1) state.queryGroup = queries;
  }
  state.pinnedKey = tokenFlag(p, "--key", render::realKeys(shown, state.item));
}

// The title without --title: the view's, then the group and what the view leaves out.
QString defaultTitle(const ArgParser& p, const ExportPlan& plan, const AttentionResult& result) {
  const render::ViewKind kind = plan.kind;
  const render::ViewState& state = plan.state;
  QString title = QStringLiteral("%1 · %2").arg(
      QString::fromStdString(result.modelName),
      render::viewSubject(kind, state, p.has("--all-layers"), p.has("--estimate")));
  const bool matrixView = kind == render::ViewKind::Heatmap || kind == render::ViewKind::Grid ||
                          kind == render::ViewKind::Compare || kind == render::ViewKind::Lines;
  if (!state.group.empty()) title += QStringLiteral(" · ") + QString::fromStdString(state.group);
  if (state.hideSpecial && matrixView &&
      render::hasSpecialTokens(result.group(state.group), state.item))
    title += QStringLiteral(" · ") + render::hiddenSpecialNote(state.showScores);
  if (state.mergeWords && (matrixView || kind == render::ViewKind::Text))
    title += QStringLiteral(" · words");
  if (p.has("--model-b"))
    title += QStringLiteral(" · B from %1")
                 .arg(QString::fromStdString(
                     std::filesystem::path(p.value("--model-b")).filename().string()));
  return title;
}

// Step 4, render: the view with the result, the state and, for the ablation view, its map.
std::unique_ptr<render::AttentionView> renderView(const ArgParser& p, const ExportPlan& plan,
                                                  const render::ResultPtr& result, Model& model,
                                                  const RunRequest& request) {
  std::unique_ptr<render::AttentionView> view(render::createView(plan.kind));
  view->resize(plan.options.width, plan.options.height);
  view->setResult(result);
  view->setViewState(plan.state);
  if (auto* alignment = dynamic_cast<render::AlignmentView*>(view.get()))
    alignment->setAllLayers(p.has("--all-layers"));
  if (auto* ablation = qobject_cast<render::AblationView*>(view.get())) {
    // The map is of the batch item shown, as in the window.
    const int item = plan.state.item;
    AblationRequest ablate;
    ablate.run = request;
    if (static_cast<std::size_t>(item) < request.texts.size())
      ablate.run.texts = {request.texts[static_cast<std::size_t>(item)]};
    ablate.estimate = p.has("--estimate");
    render::AblationStatus status;
    status.phase = render::AblationStatus::Phase::Done;
    status.item = item;
    status.estimate = ablate.estimate;
    status.ablation = std::make_shared<const HeadAblation>(model.ablateHeads(ablate));
    ablation->setAblation(status);
  }
  return view;
}

// Step 5, write: the file, then a line saying what was written.
void writeExport(render::AttentionView& view, const ExportPlan& plan) {
  const render::ExportOptions& options = plan.options;
  const QString error = render::Exporter::exportView(view, plan.out, options);
  if (!error.isEmpty()) throw Error(ErrorKind::Io, error.toStdString());
  static const char* kFormats[] = {"png", "svg", "pdf"};
  // The exporter enlarges a page too small for the view to stay readable; say so.
  const QSize asked(options.width, options.height);
  const QSize size = options.pixelSize.isValid()
                         ? asked
                         : view.legibleExportSize(asked, options.title, options.themed);
  std::printf("wrote %s (%s %s, %dx%d", plan.out.toLocal8Bit().constData(),
              render::toString(plan.kind).toLatin1().constData(),
              kFormats[static_cast<int>(options.format)], size.width(), size.height());
  if (options.format == render::ImageFormat::Png) std::printf(" at %d dpi", options.dpi);
  if (size != asked)
    std::printf("; enlarged from %dx%d to keep the text readable", asked.width(), asked.height());
  std::printf(")\n");
}

// --view step: the model writes K + 1 tokens after --text, as `generate` would with the same
// flags, and the Step view draws step K's attention (every layer and head, and their mean).
int exportGenerationStep(const ArgParser& p, ExportPlan& plan) {
  const int K = static_cast<int>(p.integer("--step", 0, 0, kMaxNewTokens - 1));
  const StepOptions options = stepOptionsFromFlags(p);
  RunRequest run = requestFromFlags(p);
  if (run.texts.size() != 1 || run.context || run.pair || run.target)
    throw UsageError("--view step generates from one --text (no --context, --pair or --target)");
  GenerationRequest request;
  request.text = run.texts.front();
  request.maxNewTokens = K + 1;
  request.device = run.device;
  const std::shared_ptr<Model> model = generatorFromFlags(p);
  applyContextLength(p, *model, run);
  request.limits = run.limits;
  const std::unique_ptr<Generation> g = model->startGeneration(request);
  std::shared_ptr<const GenerationStep> shown;
  for (int i = 0; i <= K; ++i) {
    if (!g->canStep())
      throw UsageError("--step " + std::to_string(K) + ": the model's positions end after " +
                       std::to_string(i) + " generated token(s)");
    auto st = std::make_shared<GenerationStep>(g->step(options));
    if (st->end && i < K)
      throw UsageError("--step " + std::to_string(K) + ": generation ended at step " +
                       std::to_string(i) + " (the end-of-sequence token); choose a step up to " +
                       std::to_string(i));
    shown = std::move(st);
  }
  render::GenerationFrame frame;
  frame.step = shown;
  frame.index = K;
  frame.count = K + 1;
  frame.promptLength = g->promptLength();
  frame.tokens.assign(g->tokens().begin(), g->tokens().begin() + g->promptLength() + K + 1);
  plan.options.title =
      p.has("--title")
          ? QString::fromStdString(p.value("--title"))
          : QString::fromStdString(model->info().name + ": generation step " + std::to_string(K));
  const auto app = startQt();
  render::StepView view;
  view.resize(plan.options.width, plan.options.height);
  view.setViewState(plan.state);
  view.setFrame(frame);
  writeExport(view, plan);
  return 0;
}

}  // namespace

int exportCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli export",
              "Run a model and render one view of its attention to PNG, SVG or PDF.");
  addModelFlags(p);
  addExportFlags(p);
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  ExportPlan plan = parseOptions(p);
  if (plan.kind == render::ViewKind::Step) return exportGenerationStep(p, plan);
  for (const char* flag : {"--step", "--temperature", "--top-k", "--top-p", "--repetition-penalty"})
    if (p.has(flag)) throw UsageError(std::string(flag) + " belongs to --view step");
  RunRequest request = requestFromFlags(p);
  request.keepQueryKey = plan.kind == render::ViewKind::QueryKey;
  request.keepValueNorms = p.value("--attention", "") == "value_norm";
  request.keepScoreTerms = p.has("--score-term");
  if (plan.kind == render::ViewKind::LogitLens)
    request.logitLens = render::LogitLensView::kTopTokens;
  if (p.has("--model-b") && plan.kind != render::ViewKind::Compare)
    throw UsageError("--model-b gives head B of the compare view; use it with --view compare");
  const std::shared_ptr<Model> model = modelFromFlags(p);  // step 2, open the model
  applyContextLength(p, *model, request);
  // A long input whose attention would not fit: the views that read it head by head (heatmap,
  // grid, stats, lines, text) recompute it on demand from each layer's queries and keys.
  const bool onDemandView =
      plan.kind == render::ViewKind::Heatmap || plan.kind == render::ViewKind::Grid ||
      plan.kind == render::ViewKind::Stats || plan.kind == render::ViewKind::Lines ||
      plan.kind == render::ViewKind::Text;
  if (onDemandView && !p.has("--model-b") && !request.keepValueNorms && !request.keepScoreTerms &&
      !plan.state.showScores) {
    if (std::optional<RunRequest> onDemand = onDemandIfTooLarge(*model, request))
      request = std::move(*onDemand);
  }
  const std::shared_ptr<AttentionResult> result = runModel(*model, request);
  if (!plan.state.scoreTerm.isEmpty() &&
      render::scoreTermIndex(result->group(), plan.state.scoreTerm) < 0) {
    std::string have;
    for (const ScoreTerm& t : result->group().scoreTerms)
      have += (have.empty() ? "" : ", ") + t.name;
    throw UsageError("--score-term " + plan.state.scoreTerm.toStdString() +
                     ": the model's scores have the terms " + have);
  }
  // B from a second model's run of the same text: what quantization (or a fine-tune) changes.
  std::shared_ptr<AttentionResult> other;
  if (p.has("--model-b")) other = runModel(*secondModelFromFlags(p), request);
  if (plan.kind == render::ViewKind::Experts && result->routerExperts.empty())
    throw Error(ErrorKind::InvalidArgument,
                "--view experts shows a mixture-of-experts router (mixtral, qwen2_moe, qwen3_moe, "
                "olmoe); " +
                    result->modelName + " has none");
  selectFromResult(p, *result, plan);
  plan.options.title = p.has("--title") ? QString::fromStdString(p.value("--title"))
                                        : defaultTitle(p, plan, *result);
  const auto app = startQt();
  const std::unique_ptr<render::AttentionView> view = renderView(p, plan, result, *model, request);
  if (auto* compare = qobject_cast<render::CompareView*>(view.get()); compare && other) {
    compare->setOtherResult(other);
    if (!compare->problem().isEmpty())
      throw Error(ErrorKind::InvalidArgument, "--model-b: " + compare->problem().toStdString());
  }
  writeExport(*view, plan);
  return 0;
}

}  // namespace attnscope::cli
