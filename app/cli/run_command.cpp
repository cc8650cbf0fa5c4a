// SPDX-License-Identifier: GPL-3.0-or-later
#include <cmath>
#include <cstdio>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/result_json.h"
#include "attnscope/utf8.h"
#include "commands.h"
#include "dump_writer.h"
#include "file_reader.h"
#include "model_options.h"

namespace attnscope::cli {
namespace {

// One step per line, like the tutorial's printouts: "qkv.size(): [30, 5, 1536]".
void printTrace(const AttentionResult& r) {
  std::size_t encoderLayers = 0;
  for (std::size_t l = 0; l < r.traces.size(); ++l) {
    const LayerTrace& t = r.traces[l];
    // Encoder-decoders: "encoder layer 0" ... "decoder layer 0" ...
    if (t.stack == "decoder" && encoderLayers == 0) encoderLayers = l;
    if (t.stack.empty()) {
      std::printf("layer %zu (%s)\n", l, t.variant.c_str());
    } else {
      std::printf("%s layer %zu (%s)\n", t.stack.c_str(), l - encoderLayers, t.variant.c_str());
    }
    for (const TraceStep& s : t.steps) {
      std::string name = s.name;
      if (s.head >= 0) name = "head " + std::to_string(s.head) + " " + name;
      std::printf("  %-18s %-20s %s\n", name.c_str(), FloatTensor::formatShape(s.shape).c_str(),
                  s.op.c_str());
    }
  }
}

void printSummary(const AttentionResult& r) {
  std::printf("model %s on %s: %d layer(s), batch %d, %d head(s), %d queries x %d keys\n",
              printable(r.modelName).c_str(), r.device.c_str(), r.group().layers(),
              r.group().batch(), r.group().heads(), r.group().queries(), r.group().keys());
  const auto shape = [](const AttentionGroup& g) {
    return FloatTensor::formatShape(attentionShape(g)) + (g.onDemand() ? " on demand" : "");
  };
  for (const AttentionGroup& g : r.groups) {
    if (&g == &r.groups.front()) continue;
    std::printf("%s attention %s\n", g.name.c_str(), shape(g).c_str());
  }
  std::printf("attention %s, output %s, forward %.2f ms\n", shape(r.group()).c_str(),
              r.output.shapeString().c_str(), r.timings.forwardMs);
  if (!r.logitLensIds.empty())
    std::printf("logit lens %s (layers x batch x positions x top tokens)\n",
                r.logitLensIds.shapeString().c_str());
  if (!r.group().keptLayers.empty()) {
    std::string kept;
    for (int l : r.group().keptLayers) kept += (kept.empty() ? "" : ", ") + std::to_string(l);
    std::printf("attention kept for layers %s of %d (--layers)\n", kept.c_str(),
                r.group().layers());
  }
}

// "41.2%", or "n/a" for a probability that is not a number (NaN weights), never "nan%".
std::string percent(float probability) {
  if (!std::isfinite(probability)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * probability);
  return buf;
}

// "next token: ␣the 41.2%  ␣a 7.9%  ..." for language models.
void printPredictions(const AttentionResult& r) {
  for (const MaskFill& f : r.maskFills) {
    std::printf("mask at token %d:", f.position);
    for (const Prediction& p : f.predictions)
      std::printf("  %s %s", p.token.label.c_str(), percent(p.probability).c_str());
    std::printf("\n");
  }
  if (r.nextToken.empty()) return;
  std::printf("next token after text 1:");
  for (const Prediction& p : r.nextToken) {
    std::printf("  %s %s", p.token.label.c_str(), percent(p.probability).c_str());
  }
  std::printf("\n");
}

constexpr int kMaxGenerated = 256;
constexpr int kLogitLensTop = 5;  // run --logit-lens: tokens kept per layer and position

/// A greedy generation over `text` with a key/value cache (Model::startGeneration), or null for a
/// model that has none (the toy layer): the caller then reruns the model per token.
std::unique_ptr<Generation> cachedGeneration(const Model& model, const std::string& text, int count,
                                             const RunRequest& base) {
  GenerationRequest g;
  g.text = text;
  g.maxNewTokens = count;
  g.limits = base.limits;
  g.device = base.device;
  g.keepAttention = false;
  g.candidates = 1;
  try {
    return model.startGeneration(g);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    return nullptr;  // no cache (or no head: the rerun below says so)
  }
}

/// Appends up to `count` greedy tokens to `text`: through the key/value cache where the model has
/// one (a step costs one token's forward), else each step reruns the whole model on the text so
/// far; either way the top prediction's bytes are appended. The text is tokenized again for the
/// final run, so its ids can differ from the generated ones where BPE merges across the boundary.
/// Stops early at a token without text (an end-of-sequence token) or at the model's position
/// limit. Returns the continuation.
std::string generate(const Model& model, std::string& text, int count, const RunRequest& base) {
  const ModelInfo info = model.info();
  if (!info.causal)
    throw UsageError("--generate needs a causal language model; " + info.name + " is an encoder");
  std::string continuation;
  int replaced = 0;
  const auto fits = [&](const std::string& t) {
    return info.maxPositions <= 0 ||
           model.tokenize(t).size() <= static_cast<std::size_t>(info.maxPositions);
  };
  const std::unique_ptr<Generation> cached = cachedGeneration(model, text, count, base);
  for (int i = 0; i < count; ++i) {
    Token next;
    if (cached) {
      if (!cached->canStep()) {
        std::fprintf(stderr, "notice: generation stopped at the model's %d positions\n",
                     info.maxPositions);
        break;
      }
      const GenerationStep s = cached->step({});  // greedy
      next = s.token;
      if (s.end) next.text.clear();  // the end of the text
    } else {
      RunRequest step = base;
      step.texts = {text};
      step.keepScores = false;
      step.logitLens = 0;  // only the final run's
      const AttentionResult r = model.run(step);
      if (r.nextToken.empty())
        throw UsageError(info.name +
                         " has no language-model head (the checkpoint holds the decoder only): it "
                         "cannot generate");
      next = r.nextToken.front().token;  // the most likely: greedy
    }
    if (next.text.empty()) break;
    // The text is tokenized again each step, so it must stay valid UTF-8: a byte token that is
    // part of a character becomes U+FFFD, as Hugging Face's decode(errors="replace") writes it.
    const bool whole = isValidUtf8(next.text);
    const std::string piece = whole ? next.text : "\xEF\xBF\xBD";
    if (!fits(text + piece)) {
      std::fprintf(stderr, "notice: generation stopped at the model's %d positions\n",
                   info.maxPositions);
      break;
    }
    replaced += whole ? 0 : 1;
    text += piece;
    continuation += piece;
  }
  if (replaced > 0)
    std::fprintf(stderr,
                 "notice: %d generated token(s) held part of a UTF-8 character and were written "
                 "as U+FFFD\n",
                 replaced);
  return continuation;
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli run",
              "Run a model on text (or random input) and report its attention.");
  addModelFlags(p);
  p.flag("--trace", "print the shape trace, one step per line")
      .option("--json", "FILE", "write tokens, shapes, trace, device, timings and attention")
      .option("--dump", "DIR",
              "write input/attention/output .npy, weights.safetensors, trace/tokens .json, "
              "logits.npy (the head's logits at every position, where the model has a head and "
              "they fit the memory limit), and for DeBERTa scores_{c2c,c2p,p2c}.npy (the terms of "
              "the pre-softmax scores)")
      .flag("--logit-lens",
            "also compute the logit lens (causal language models with a head): each layer's top "
            "5 tokens and the next token's probability at every position, written by --dump as "
            "logit_lens_{ids,probs,next}.npy")
      .flag("--on-demand",
            "keep each layer's queries and keys instead of its attention, which is recomputed "
            "from them (long inputs; a run over the memory limit does this by itself unless "
            "--json or --dump asks for the weights): --json then holds no weights and says "
            "\"attention_on_demand\": true")
      .option("--generate", "N",
              "first append N greedy tokens (at most 256, within the model's positions) to each "
              "text, then run on the result (causal language models); encoder-decoders: the "
              "decoder generates up to N tokens after the start token (and any --target)");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  RunRequest request = requestFromFlags(p);
  // Nothing run prints or writes reads the pre-softmax scores: not keeping them halves what a
  // long run holds (GPT-2 at T = 1000: 576 MB less).
  request.keepScores = false;
  if (p.has("--logit-lens")) request.logitLens = kLogitLensTop;
  request.keepLogits = p.has("--dump");  // logits.npy
  // Before the run: a folder or unwritable --json fails now, not after the computation, and the
  // JSON's own memory counts in the estimate the run is refused by.
  if (p.has("--json")) {
    checkOutputPath(p.value("--json"), "--json");
    request.limits.outputBytesPerAttentionValue = kResultJsonBytesPerAttentionValue;
  }
  const auto model = modelFromFlags(p);
  applyContextLength(p, *model, request);
  const bool encoderDecoder = model->info().encoderDecoder();
  // DeBERTa's c2c, c2p and p2c, for scores_<term>.npy.
  request.keepScoreTerms = p.has("--dump") && !model->info().scoreTerms.empty();
  if (p.has("--generate") && encoderDecoder) {
    // The core generates token by token after the encoder has run once
    // (AttentionResult::generated).
    if (request.texts.empty()) throw UsageError("--generate needs --text");
    request.generate = static_cast<int>(p.integer("--generate", 1, 1, kMaxGenerated));
  } else if (p.has("--generate")) {
    if (request.texts.empty()) throw UsageError("--generate needs --text");
    const int count = static_cast<int>(p.integer("--generate", 1, 1, kMaxGenerated));
    for (std::size_t i = 0; i < request.texts.size(); ++i) {
      const std::string added = generate(*model, request.texts[i], count, request);
      std::printf("generated after text %zu: %s\n", i + 1, added.c_str());
    }
  }
  // A long input: the summary, predictions and trace need no stored attention, so a run whose
  // attention would not fit recomputes it on demand. --json and --dump are asked for the weights:
  // they refuse, and --on-demand writes the JSON without them ("attention_on_demand": true).
  bool onDemandFits = false;
  if (p.has("--on-demand")) {
    if (p.has("--dump")) throw UsageError("--on-demand keeps no attention for --dump to write");
    request = onDemandRequest(request);
  } else if (!p.has("--json") && !p.has("--dump")) {
    if (std::optional<RunRequest> onDemand = onDemandIfTooLarge(*model, request))
      request = std::move(*onDemand);
  } else if (p.has("--json")) {
    onDemandFits = onDemandIfTooLarge(*model, request, /*notice=*/false).has_value();
  }
  const AttentionResult result = [&] {
    try {
      return model->run(request);
    } catch (const Error& e) {
      if (!onDemandFits || e.kind() != ErrorKind::ResourceLimit) throw;
      throw Error(e.kind(), std::string(e.what()) +
                                "; --on-demand recomputes the attention instead of storing it "
                                "and writes the JSON without the weights");
    }
  }();
  for (std::size_t i = 0; i < result.generated.size() && request.generate > 0; ++i) {
    std::string added;
    for (const Token& t : result.generated[i]) added += t.special ? t.label : t.text;
    if (!isValidUtf8(added)) {
      // Byte-level pieces that stop inside a character: their readable labels instead.
      added.clear();
      for (const Token& t : result.generated[i]) added += t.label;
    }
    std::printf("generated after text %zu: %s\n", i + 1, added.c_str());
  }
  for (const std::string& n : result.notices)
    std::fprintf(stderr, "notice: %s\n", printable(n).c_str());
  printSummary(result);
  // What the file held, when the parameters do not say it (a GGUF file's quantized types).
  if (const std::string file = model->info().fileSummary; !file.empty())
    std::printf("file: %s\n", file.c_str());
  printPredictions(result);
  if (p.has("--trace")) printTrace(result);
  if (p.has("--json")) writeTextFile(p.value("--json"), resultJson(result));
  if (p.has("--dump")) writeDump(p.value("--dump"), result, *model);
  return 0;
}

}  // namespace attnscope::cli
