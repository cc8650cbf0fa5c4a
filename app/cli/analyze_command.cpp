// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "arg_parser.h"
#include "attnscope/attention_rollout.h"
#include "attnscope/head_ablation.h"
#include "attnscope/head_statistics.h"
#include "attnscope/induction_probe.h"
#include "attnscope/induction_scores.h"
#include "attnscope/long_range.h"
#include "attnscope/needle_retrieval.h"
#include "attnscope/result_json.h"
#include "attnscope/value_weighted_norms.h"
#include "commands.h"
#include "file_reader.h"
#include "model_options.h"

namespace attnscope::cli {
namespace {

using nlohmann::json;

// [rows][columns] from a row-major vector.
json matrixJson(const std::vector<double>& values, int rows, int columns) {
  json m = json::array();
  for (int r = 0; r < rows; ++r) {
    const auto begin = values.begin() + static_cast<std::ptrdiff_t>(r) * columns;
    m.push_back(std::vector<double>(begin, begin + columns));
  }
  return m;
}

json tokensOf(const AttentionGroup& g, int item) {
  json tokens = json::array();
  for (const Token& t : g.tokens[static_cast<std::size_t>(item)])
    tokens.push_back({{"id", t.id}, {"text", t.text}, {"label", t.label}});
  return tokens;
}

// The three heads with the highest score, for the terminal: "L3 H7 0.91".
void printTopHeads(const char* what, const std::vector<double>& scores, int heads) {
  std::vector<std::size_t> order(scores.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::size_t shown = std::min<std::size_t>(3, order.size());
  // NaN (a layer the run did not keep) ranks last: a comparison with NaN is no ordering.
  const auto key = [&](std::size_t i) { return std::isnan(scores[i]) ? -HUGE_VAL : scores[i]; };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                    [&](std::size_t a, std::size_t b) { return key(a) > key(b); });
  std::printf("%s:", what);
  for (std::size_t i = 0; i < shown; ++i)
    std::printf("  L%zu H%zu %.3f", order[i] / static_cast<std::size_t>(heads),
                order[i] % static_cast<std::size_t>(heads), scores[order[i]]);
  std::printf("\n");
}

// Replaces the request's text by the seeded induction probe built from the pieces of --text.
void useProbe(const Model& model, const ArgParser& p, RunRequest& request) {
  if (request.texts.size() != 1)
    throw UsageError("--probe builds its sequence from the pieces of one --text");
  const int length = static_cast<int>(p.integer("--probe", 1, 1, 1 << 16));
  const uint64_t seed = static_cast<uint64_t>(p.integer("--probe-seed", 0, 0, (1ll << 62)));
  const InductionProbe probe = inductionProbe(probePieces(model, request.texts[0]), length, seed);
  request.texts = {probe.text};
  // Neighbouring pieces can merge under BPE; the scores use the ids the model really saw.
  std::vector<int64_t> seen;
  for (const Token& t : model.tokenize(probe.text))
    if (!t.special) seen.push_back(t.id);
  if (seen != probe.expectedIds())
    std::fprintf(stderr,
                 "notice: the probe's %zu pieces tokenize to %zu tokens when joined; the scores "
                 "use the tokens as the model saw them\n",
                 probe.expectedIds().size(), seen.size());
}

// --measure ablation: every head's effect on the model's top prediction, exact or estimated.
json ablationJson(const Model& model, const ArgParser& p, RunRequest request, int item) {
  if (item >= static_cast<int>(request.texts.size()))
    throw UsageError("--item " + std::to_string(item) + " is out of range: the batch has " +
                     std::to_string(request.texts.size()) + " item(s)");
  AblationRequest a;
  a.run = std::move(request);
  a.run.texts = {a.run.texts[static_cast<std::size_t>(item)]};
  a.estimate = p.has("--estimate");
  a.maskPosition = static_cast<int>(p.integer("--position", -1, 0, 1 << 20));
  const HeadAblation r = model.ablateHeads(a);
  for (const std::string& n : r.notices) std::fprintf(stderr, "notice: %s\n", printable(n).c_str());
  json tokens = json::array();
  for (const Token& t : r.tokens)
    tokens.push_back({{"id", t.id}, {"text", t.text}, {"label", t.label}});
  const auto matrix = [&](const FloatTensor& t) {
    return matrixJson(std::vector<double>(t.data.begin(), t.data.end()), r.layers, r.heads);
  };
  std::printf("%s of %d heads: p(%s) = %.4f %s position %d\n",
              r.estimate ? "attribution-patching estimate" : "exact ablation", r.layers * r.heads,
              r.target.label.c_str(), r.baseline, r.maskFill ? "filling the mask at" : "after",
              r.position);
  std::vector<double> drop(r.logProbChange.data.begin(), r.logProbChange.data.end());
  for (double& d : drop) d = -d;
  printTopHeads(r.estimate ? "largest estimated drops of log p" : "largest drops of log p", drop,
                r.heads);
  return {{"tokens", std::move(tokens)},
          {"ablation",
           {{"token", r.target.id},
            {"text", r.target.text},
            {"label", r.target.label},
            {"position", r.position},
            {"mask_fill", r.maskFill},
            {"estimate", r.estimate},
            {"baseline", r.baseline},
            {"heads", matrix(r.probabilities)},
            {"log_prob_change", matrix(r.logProbChange)}}}};
}

// --measure model-distance: each head's mean JS distance to the same head of the second model.
json modelDistanceJson(const Model& a, const Model& b, const RunRequest& request, int item) {
  const AttentionResult ra = a.run(request), rb = b.run(request);
  for (const AttentionResult* r : {&ra, &rb})
    for (const std::string& n : r->notices)
      std::fprintf(stderr, "notice: %s: %s\n", printable(r->modelName).c_str(),
                   printable(n).c_str());
  if (item >= ra.group().batch())
    throw UsageError("--item " + std::to_string(item) + " is out of range: the batch has " +
                     std::to_string(ra.group().batch()) + " item(s)");
  const std::vector<double> d = headDistancesBetween(ra.group(), rb.group(), item);
  const int layers = ra.group().layers(), heads = ra.group().heads();
  double sum = 0;
  int kept = 0;
  std::vector<double> ranked = d;  // NaN (a layer not kept) ranks last
  for (double& v : ranked) {
    if (std::isnan(v)) {
      v = -1;
      continue;
    }
    sum += v;
    ++kept;
  }
  std::printf("per-head Jensen-Shannon distance, %s against %s: mean %.4f over %d heads\n",
              printable(rb.modelName).c_str(), printable(ra.modelName).c_str(),
              kept ? sum / kept : 0.0, kept);
  printTopHeads("most changed heads", ranked, heads);
  return {{"model_b", rb.modelName},
          {"tokens", tokensOf(ra.group(), item)},
          {"distance", matrixJson(d, layers, heads)}};
}

// The flags of `analyze` besides the model flags.
void addAnalyzeFlags(ArgParser& p) {
  p.option("--measure", "M",
           "rollout (attention composed across layers, T x T), induction (per-head induction, "
           "previous-token and duplicate-token scores, L x H) or value-norm (||a_ij f_h(x_j)||, "
           "L x H x T x T; the decoders and encoders, not the toy layer or encoder-decoders) or "
           "ablation (p of the top prediction with "
           "each head's output zeroed, L x H) or model-distance (each head's mean Jensen-Shannon "
           "distance to the same head of --model-b on the same text, L x H: which heads "
           "quantization or fine-tuning changes most) or long-range (each head's attention-sink "
           "share, its weight by log-distance bucket, entropy and mean distance, L x H, with the "
           "attention computed on demand so that long inputs fit) or retrieval (the needle test: "
           "--needle inserted into the filler --text at --depth, --question after it; each "
           "head's weight from the question's tokens onto the needle's, L x H, on demand)")
      .option("--model-b", "M", "model-distance: the second model (same tokenizer)")
      .option("--json", "FILE", "write the measure and the tokens as JSON")
      .option("--layer", "L", "rollout: compose layers 0..L only; default every layer")
      .option("--item", "N", "batch item to analyse; default 0")
      .option("--probe", "N",
              "induction: run on N distinct pieces of --text in seeded random order, written twice")
      .option("--probe-seed", "N", "seed of --probe; default 0")
      .flag("--estimate",
            "ablation: estimate every head's effect by attribution patching (one forward and one "
            "backward: -head output . d log p / d head output) instead of L x H exact reruns")
      .option("--position", "N",
              "ablation of an encoder: the mask token whose fill is read; default the first")
      .option("--sink-tokens", "K", "long-range: the first K tokens form the sink; default 4")
      .option("--thumbnail", "N",
              "long-range: also each head's attention max-pooled to at most N x N cells")
      .option("--needle", "TEXT", "retrieval: the passage to find, inserted into --text")
      .option("--question", "TEXT",
              "retrieval: appended after the filler; its tokens' attention is read (default: "
              "none, the last token's)")
      .option("--depth", "F",
              "retrieval: where the needle goes, 0 (start) to 1 (end) of the filler; default 0.5");
}

// --measure, with every flag that belongs to another measure refused.
std::string measureFromFlags(const ArgParser& p) {
  if (!p.has("--measure"))
    throw UsageError(
        "--measure is required: rollout, induction, value-norm, ablation, model-distance, "
        "long-range or retrieval");
  const std::string measure = p.value("--measure");
  if (measure != "rollout" && measure != "induction" && measure != "value-norm" &&
      measure != "ablation" && measure != "model-distance" && measure != "long-range" &&
      measure != "retrieval")
    throw UsageError(
        "unknown --measure '" + measure +
        "' (rollout, induction, value-norm, ablation, model-distance, long-range or retrieval)");
  for (const char* flag : {"--needle", "--question", "--depth"})
    if (p.has(flag) && measure != "retrieval")
      throw UsageError(std::string(flag) +
                       " belongs to the retrieval measure; use it with --measure retrieval");
  if (measure == "retrieval" && p.has("--item"))
    throw UsageError(
        "--measure retrieval runs one text, the filler with the needle: leave out --item");
  if (measure == "retrieval" && !p.has("--needle"))
    throw UsageError("--measure retrieval needs --needle TEXT, the passage to find");
  if ((p.has("--sink-tokens") || p.has("--thumbnail")) && measure != "long-range")
    throw UsageError(std::string(p.has("--sink-tokens") ? "--sink-tokens" : "--thumbnail") +
                     " belongs to the long-range measure; use it with --measure long-range");
  if (p.has("--model-b") != (measure == "model-distance"))
    throw UsageError(p.has("--model-b")
                         ? "--model-b is the second model of --measure model-distance"
                         : "--measure model-distance compares with --model-b M");
  if ((p.has("--estimate") || p.has("--position")) && measure != "ablation")
    throw UsageError(std::string(p.has("--estimate") ? "--estimate" : "--position") +
                     " belongs to the ablation measure; use it with --measure ablation");
  if (p.has("--layer") && measure != "rollout")
    throw UsageError("--layer limits rollout only; leave it out for --measure " + measure);
  if ((p.has("--probe") || p.has("--probe-seed")) && measure != "induction")
    throw UsageError("--probe feeds the induction measure; use it with --measure induction");
  if (p.has("--probe-seed") && !p.has("--probe")) throw UsageError("--probe-seed needs --probe");
  return measure;
}

// --measure long-range: every head's sink share, distance profile and statistics, read a block
// of rows at a time from attention computed on demand (no T x T matrix is held), and with
// --thumbnail N its max-pooled N x N picture.
json longRangeJson(const AttentionGroup& group, int item, int sinkTokens, int thumbnail) {
  const int L = group.layers(), H = group.heads();
  std::vector<double> sink, entropy, distance, first;
  json mass = json::array(), thumbs = json::array();
  for (int l = 0; l < L; ++l) {
    json massRow = json::array(), thumbRow = json::array();
    for (int h = 0; h < H; ++h) {
      const LongRangeProfile r = longRangeProfile(group, l, item, h, sinkTokens);
      sink.push_back(r.sinkShare);
      entropy.push_back(r.statistics.entropy);
      distance.push_back(r.statistics.meanDistance);
      first.push_back(r.statistics.firstToken);
      massRow.push_back(r.distanceMass);
      if (thumbnail > 0) {
        const std::vector<float> t = pooledAttention(group, l, item, h, thumbnail, thumbnail);
        // min(N, real queries) rows of min(N, real keys) cells.
        const int rows = std::min(thumbnail, group.queryLengths[static_cast<std::size_t>(item)]);
        const int cols = rows > 0 ? static_cast<int>(t.size()) / rows : 0;
        thumbRow.push_back(matrixJson(std::vector<double>(t.begin(), t.end()), rows, cols));
      }
    }
    mass.push_back(std::move(massRow));
    if (thumbnail > 0) thumbs.push_back(std::move(thumbRow));
  }
  std::printf("long range: %d layers x %d heads over %d tokens (attention on demand)\n", L, H,
              group.queryLengths[static_cast<std::size_t>(item)]);
  printTopHeads(("sink (first " + std::to_string(sinkTokens) + " tokens)").c_str(), sink, H);
  printTopHeads("mean distance", distance, H);
  json out = {{"sink_tokens", sinkTokens},
              {"sink", matrixJson(sink, L, H)},
              {"first_token", matrixJson(first, L, H)},
              {"entropy", matrixJson(entropy, L, H)},
              {"mean_distance", matrixJson(distance, L, H)},
              {"distance_mass", std::move(mass)}};
  if (thumbnail > 0) out["thumbnails"] = std::move(thumbs);
  return out;
}

// --measure retrieval: the needle test. The filler (--text) with --needle inserted at --depth and
// --question after it; each head's weight from the question's tokens onto the needle's tokens,
// read from attention computed on demand, so that a haystack of thousands of tokens fits.
json retrievalJson(const Model& model, const ArgParser& p, RunRequest request) {
  if (request.random) throw UsageError("the needle test reads text; give --text as the filler");
  if (request.texts.size() != 1)
    throw UsageError("--measure retrieval takes one --text, the filler the needle goes into");
  // The needle's tokens index the keys of the text's own self-attention.
  if (request.context || request.pair || request.target)
    throw UsageError(std::string(request.context ? "--context"
                                 : request.pair  ? "--pair"
                                                 : "--target") +
                     " does not go with --measure retrieval: the needle and the question are "
                     "read in one text's own attention");
  const double depth = p.number("--depth", 0.5, 0.0, 1.0);
  const NeedleText nt =
      needleText(request.texts[0], p.value("--needle"), p.value("--question", ""), depth);
  request.texts = {nt.text};
  request.attentionOnDemand = true;
  const AttentionResult result = model.run(request);
  for (const std::string& n : result.notices)
    std::fprintf(stderr, "notice: %s\n", printable(n).c_str());
  const AttentionGroup& group = result.group();
  const std::vector<Token>& tokens = group.tokens.at(0);
  const std::vector<int> needle = tokensOfBytes(tokens, nt.needleBegin, nt.needleEnd);
  // A text longer than the model's context keeps its last tokens: a needle cut off in whole or in
  // part would be measured over what is left of it.
  if (needle.empty() || tokens[static_cast<std::size_t>(needle.front())].byteBegin > nt.needleBegin)
    throw UsageError("the needle is cut off: the model sees only the last " +
                     std::to_string(tokens.size()) +
                     " tokens of the text; give a shorter filler or a larger --depth");
  // The question's rows read; a token holding bytes of both (a merge at the join) is the
  // needle's, never its own reader.
  std::vector<int> question;
  for (int q : tokensOfBytes(tokens, nt.questionBegin, nt.questionEnd))
    if (std::find(needle.begin(), needle.end(), q) == needle.end()) question.push_back(q);
  if (question.empty() && nt.questionEnd > nt.questionBegin)
    std::fprintf(stderr,
                 "notice: the question gave no tokens of its own; the last token reads instead\n");
  if (question.empty()) {
    // No question: the last real token that is not an inserted special ([SEP], </s>) reads, as a
    // language model about to continue.
    for (int q = static_cast<int>(tokens.size()) - 1; q >= 0 && question.empty(); --q)
      if (!tokens[static_cast<std::size_t>(q)].special &&
          std::find(needle.begin(), needle.end(), q) == needle.end())
        question = {q};
    if (question.empty())
      throw UsageError("no token after the needle reads it: give --question or a depth below 1");
  }
  const NeedleRetrieval r = needleRetrieval(group, 0, needle, question);
  std::printf("needle: tokens %d-%d of %d, read from %zu question token(s) (attention on demand)\n",
              needle.front(), needle.back(), static_cast<int>(tokens.size()), question.size());
  printTopHeads("weight on the needle", r.mass, r.heads);
  printTopHeads("rows whose top key is in the needle", r.top, r.heads);
  json out = {{"text", nt.text},
              {"depth", depth},
              // Where the needle went: the first white space at or after the depth.
              {"needle_at", nt.at},
              {"needle_bytes", {nt.needleBegin, nt.needleEnd}},
              {"question_bytes", {nt.questionBegin, nt.questionEnd}},
              {"needle_tokens", needle},
              {"question_tokens", question},
              {"tokens", tokensOf(group, 0)},
              {"needle_mass", matrixJson(r.mass, r.layers, r.heads)},
              {"needle_top", matrixJson(r.top, r.layers, r.heads)}};
  return out;
}

// --measure value-norm: [layers][heads][query][key].
json valueNormJson(const AttentionGroup& group, int item) {
  const ValueWeightedNorms n = valueWeightedNorms(group, item);
  json layers = json::array();
  const std::size_t perHead = static_cast<std::size_t>(n.tokens) * n.tokens;
  for (int l = 0; l < n.layers; ++l) {
    json heads = json::array();
    for (int h = 0; h < n.heads; ++h) {
      const std::size_t begin = (static_cast<std::size_t>(l) * n.heads + h) * perHead;
      heads.push_back(matrixJson(
          std::vector<double>(n.values.begin() + static_cast<std::ptrdiff_t>(begin),
                              n.values.begin() + static_cast<std::ptrdiff_t>(begin + perHead)),
          n.tokens, n.tokens));
    }
    layers.push_back(std::move(heads));
  }
  std::printf("value-weighted norms: %d layers x %d heads x %d x %d\n", n.layers, n.heads, n.tokens,
              n.tokens);
  return layers;
}

// --measure induction: the three scores per head, the top heads of each printed.
void addInduction(const AttentionGroup& group, int item, json& out) {
  const InductionScores s = inductionScores(group, item);
  out["induction"] = matrixJson(s.induction, s.layers, s.heads);
  out["previous_token"] = matrixJson(s.previousToken, s.layers, s.heads);
  out["duplicate_token"] = matrixJson(s.duplicateToken, s.layers, s.heads);
  out["repeated_positions"] = s.repeatedPositions;
  if (s.repeatedPositions == 0)
    std::fprintf(stderr,
                 "notice: no token repeats with a gap, so the induction and duplicate-token "
                 "scores are 0 (try --probe N)\n");
  std::printf("%d repeated position(s)\n", s.repeatedPositions);
  printTopHeads("induction", s.induction, s.heads);
  printTopHeads("previous token", s.previousToken, s.heads);
  printTopHeads("duplicate token", s.duplicateToken, s.heads);
}

}  // namespace

int analyzeCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli analyze",
              "Compute a measure beyond raw attention: attention rollout, induction scores, "
              "value-weighted norms, head ablation, the distance to a second model, long-range "
              "profiles or the needle test.");
  addModelFlags(p);
  addAnalyzeFlags(p);
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  const std::string measure = measureFromFlags(p);
  RunRequest request = requestFromFlags(p);
  if (request.random && (measure == "induction" || measure == "ablation"))
    throw UsageError(std::string(measure == "induction" ? "induction scores need token ids"
                                                        : "head ablation reads a prediction") +
                     "; give --text, not random input");
  request.keepScores = false;  // the measures read the weights only
  request.keepValueNorms = measure == "value-norm";
  request.attentionOnDemand = measure == "long-range";
  if (p.has("--json")) {
    // Before the run, as `run --json`: a bad path fails now, and value norms (as many as the
    // attention values) count their JSON in the estimate.
    checkOutputPath(p.value("--json"), "--json");
    if (measure == "value-norm")
      request.limits.outputBytesPerAttentionValue = kResultJsonBytesPerAttentionValue;
  }
  const auto writeJson = [&](const json& out) {
    if (p.has("--json"))
      writeTextFile(p.value("--json"),
                    out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
  };
  const auto model = modelFromFlags(p);
  applyContextLength(p, *model, request);
  if (measure == "ablation") {
    const int item = static_cast<int>(p.integer("--item", 0, 0, 1 << 20));
    json out = {{"model", model->info().name}, {"measure", measure}, {"item", item}};
    out.update(ablationJson(*model, p, request, item));
    writeJson(out);
    return 0;
  }
  if (measure == "model-distance") {
    if (request.random) throw UsageError("model-distance compares runs of one text; give --text");
    const int item = static_cast<int>(p.integer("--item", 0, 0, 1 << 20));
    json out = {{"model", model->info().name}, {"measure", measure}, {"item", item}};
    out.update(modelDistanceJson(*model, *secondModelFromFlags(p), request, item));
    writeJson(out);
    return 0;
  }
  if (measure == "retrieval") {
    json out = {{"model", model->info().name}, {"measure", measure}, {"item", 0}};
    out.update(retrievalJson(*model, p, request));
    writeJson(out);
    return 0;
  }
  if (p.has("--probe")) useProbe(*model, p, request);
  const AttentionResult result = model->run(request);
  for (const std::string& n : result.notices)
    std::fprintf(stderr, "notice: %s\n", printable(n).c_str());
  const AttentionGroup& group = result.group();
  const int item = static_cast<int>(p.integer("--item", 0, 0, 1 << 20));
  if (item >= group.batch())
    throw UsageError("--item " + std::to_string(item) + " is out of range: the batch has " +
                     std::to_string(group.batch()) + " item(s)");

  json out = {{"model", result.modelName}, {"measure", measure}, {"item", item}};
  if (!group.tokens.empty()) out["tokens"] = tokensOf(group, item);
  if (measure == "rollout") {
    const int layer = static_cast<int>(p.integer("--layer", -1, 0, 1 << 20));
    const AttentionRollout r = attentionRollout(group, item, layer);
    out["rollout"] = matrixJson(r.values, r.tokens, r.tokens);
    out["layers"] = r.layers;
    std::printf("rollout over layers 0..%d: %d x %d\n", r.layers - 1, r.tokens, r.tokens);
  } else if (measure == "value-norm") {
    out["value_norm"] = valueNormJson(group, item);
  } else if (measure == "long-range") {
    out.update(longRangeJson(group, item,
                             static_cast<int>(p.integer("--sink-tokens", 4, 1, 1 << 20)),
                             static_cast<int>(p.integer("--thumbnail", 0, 1, 4096))));
  } else {
    addInduction(group, item, out);
  }
  writeJson(out);
  return 0;
}

}  // namespace attnscope::cli
