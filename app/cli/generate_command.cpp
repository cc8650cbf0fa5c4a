// SPDX-License-Identifier: GPL-3.0-or-later
// attnscope-cli generate: step-by-step generation with a key/value cache (Model::startGeneration),
// printing the text as it is written and writing every step's candidates and attention row.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "arg_parser.h"
#include "attnscope/file_io.h"
#include "attnscope/model_spec.h"
#include "attnscope/npy.h"
#include "attnscope/result_json.h"
#include "attnscope/runtime.h"
#include "attnscope/utf8.h"
#include "commands.h"
#include "file_reader.h"
#include "model_options.h"

namespace attnscope::cli {
namespace {

/// What a token adds to the text: its bytes, or its label for a special token (<|endoftext|>).
std::string pieceOf(const Token& t) { return t.special ? t.label : t.text; }

/// A token for JSON: its bytes when they are whole UTF-8, else its readable label ("<0xE2>").
std::string jsonToken(const Token& t) { return isValidUtf8(t.text) ? t.text : t.label; }

std::string stepFileName(std::size_t step, const char* kind = "step") {
  char name[48];
  std::snprintf(name, sizeof name, "%s_%04zu.npy", kind, step);
  return name;
}

/// A [L, H, T] tensor as nested lists [L][H][T]; empty when it has no such shape.
nlohmann::json rowsJson(const FloatTensor& rows) {
  nlohmann::json out = nlohmann::json::array();
  const std::vector<int64_t>& shape = rows.shape;
  if (shape.size() != 3) return out;
  const auto T = static_cast<std::size_t>(shape[2]);
  for (int64_t l = 0; l < shape[0]; ++l) {
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t h = 0; h < shape[1]; ++h) {
      const auto at = (static_cast<std::size_t>(l) * static_cast<std::size_t>(shape[1]) +
                       static_cast<std::size_t>(h)) *
                      T;
      heads.push_back(std::vector<float>(rows.data.begin() + static_cast<long>(at),
                                         rows.data.begin() + static_cast<long>(at + T)));
    }
    out.push_back(std::move(heads));
  }
  return out;
}

/// The JSON: {"text", "ids", "steps": [{"id", "token", "candidates": [{"id", "token",
/// "p"}], "attention": [L][H][T_step]}]}; p is the model's own probability. Encoder-decoders
/// add "source_ids" and each step's "cross_attention" [L][H][T_source]; "ids" are then the
/// decoder's (the start token, then the generated ones).
nlohmann::json generationJson(const Generation& g, const std::vector<GenerationStep>& steps) {
  nlohmann::json out;
  nlohmann::json ids = nlohmann::json::array();
  for (const Token& t : g.tokens()) ids.push_back(t.id);
  out["ids"] = std::move(ids);
  if (!g.sourceTokens().empty()) {
    nlohmann::json source = nlohmann::json::array();
    for (const Token& t : g.sourceTokens()) source.push_back(t.id);
    out["source_ids"] = std::move(source);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const GenerationStep& s : steps) {
    nlohmann::json step;
    step["id"] = s.token.id;
    step["token"] = jsonToken(s.token);
    nlohmann::json candidates = nlohmann::json::array();
    for (const GenerationCandidate& c : s.candidates)
      candidates.push_back({{"id", c.token.id}, {"token", jsonToken(c.token)}, {"p", c.pModel}});
    step["candidates"] = std::move(candidates);
    step["attention"] = rowsJson(s.attention);  // [L, H, T_step]
    if (!g.sourceTokens().empty()) step["cross_attention"] = rowsJson(s.crossAttention);
    list.push_back(std::move(step));
  }
  out["steps"] = std::move(list);
  return out;
}

}  // namespace

int generateCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli generate",
              "Generate text step by step with a key/value cache (causal language models; "
              "encoder-decoders from the source text), printing it as it is written; --json "
              "keeps every step's candidates and attention.");
  p.option("--model", "M", "a model folder, a cached name, or default (the bundled tiny GPT)")
      .option("--text", "TEXT", "the prompt (an encoder-decoder's source text)")
      .option("--max-new-tokens", "N", "tokens to generate, at most 4096; default 20")
      .option("--json", "FILE", "write text, ids and every step's candidates and attention")
      .option("--dump", "DIR",
              "write every step's attention [L, H, T] as step_NNNN.npy (encoder-decoders: "
              "cross_NNNN.npy [L, H, T_source] too) and tokens.json")
      .option("--device", "D", "auto (default), cpu or cuda")
      .option("--threads", "N", "CPU threads; default all cores")
      .option("--max-tokens", "N", "refuse more tokens in all; default 4096")
      .option("--memory-limit", "MIB", "refuse generations estimated above this; default 8192");
  addSamplingFlags(p);
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (!p.has("--model")) throw UsageError("give --model M (a folder, a cached name or default)");
  if (!p.has("--text")) throw UsageError("give --text TEXT, the prompt");
  const int count = static_cast<int>(p.integer("--max-new-tokens", 20, 1, kMaxNewTokens));
  const StepOptions step = stepOptionsFromFlags(p);
  if (p.has("--json")) checkOutputPath(p.value("--json"), "--json");

  GenerationRequest request;
  request.text = p.value("--text");
  request.maxNewTokens = count;
  request.device = parseDevice(p.value("--device", "auto"));
  request.limits.maxTokens = static_cast<int>(p.integer("--max-tokens", 4096, 1, 1 << 20));
  request.limits.memoryLimitBytes = memoryLimitFromFlags(p);
  request.keepAttention = p.has("--json") || p.has("--dump");
  ModelSpec spec;
  spec.source = p.value("--model");
  spec.memoryLimitBytes = request.limits.memoryLimitBytes;
  if (p.has("--threads")) setThreadCount(static_cast<int>(p.integer("--threads", 0, 1, 1024)));
  const std::shared_ptr<Model> model = openModel(spec);
  const std::unique_ptr<Generation> g = model->startGeneration(request);

  // An encoder-decoder writes a new text (a translation, say): the source is printed on its own
  // line, and "text" is the generated text alone.
  const bool seq2seq = !g->sourceTokens().empty();
  std::string text = seq2seq ? std::string() : request.text;
  std::fputs(request.text.c_str(), stdout);
  if (seq2seq) std::fputs("\n", stdout);
  std::fflush(stdout);
  std::vector<GenerationStep> steps;
  for (int i = 0; i < count; ++i) {
    if (!g->canStep()) {
      std::fprintf(stderr, "\nnotice: generation stopped after %zu tokens, the model's limit\n",
                   g->tokens().size());
      break;
    }
    GenerationStep st = g->step(step);
    const std::string piece = pieceOf(st.token);
    text += piece;
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
    const bool end = st.end;
    steps.push_back(std::move(st));
    if (end) break;
  }
  std::fputs("\n", stdout);
  std::fflush(stdout);  // before the summary on stderr, which shares the terminal
  if (!steps.empty()) {
    // The first step runs the prompt too; the others one token each, through the cache.
    double rest = 0;
    for (std::size_t i = 1; i < steps.size(); ++i) rest += steps[i].milliseconds;
    std::fprintf(stderr, "generated %zu token(s) after %d: first step (with the prompt) %.1f ms",
                 steps.size(), g->promptLength(), steps.front().milliseconds);
    if (steps.size() > 1)
      std::fprintf(stderr, ", then %.2f ms per token",
                   rest / static_cast<double>(steps.size() - 1));
    std::fputs("\n", stderr);
  }
  if (p.has("--json")) {
    nlohmann::json out = generationJson(*g, steps);
    out["text"] = text;
    // Invalid UTF-8 (a byte-level token cut inside a character) becomes U+FFFD.
    writeTextFile(p.value("--json"),
                  out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (p.has("--dump")) {
    std::vector<std::string> names{"tokens.json"};
    for (int i = 0; i < kMaxNewTokens; ++i) {
      names.push_back(stepFileName(static_cast<std::size_t>(i)));
      names.push_back(stepFileName(static_cast<std::size_t>(i), "cross"));
    }
    replaceFolderAtomically(
        p.value("--dump"), names,
        [&](const std::string& temp) {
          for (std::size_t i = 0; i < steps.size(); ++i) {
            writeNpy((std::filesystem::path(temp) / stepFileName(i)).string(), steps[i].attention);
            if (seq2seq)
              writeNpy((std::filesystem::path(temp) / stepFileName(i, "cross")).string(),
                       steps[i].crossAttention);
          }
          nlohmann::json tokens;
          tokens["prompt_length"] = g->promptLength();
          if (seq2seq) {
            nlohmann::json source = nlohmann::json::array();
            for (const Token& t : g->sourceTokens())
              source.push_back({{"id", t.id}, {"token", jsonToken(t)}});
            tokens["source"] = std::move(source);
          }
          nlohmann::json list = nlohmann::json::array();
          for (const Token& t : g->tokens())
            list.push_back({{"id", t.id}, {"token", jsonToken(t)}});
          tokens["tokens"] = std::move(list);
          writeTextFile(
              (std::filesystem::path(temp) / "tokens.json").string(),
              tokens.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        },
        "--dump folder");
  }
  return 0;
}

}  // namespace attnscope::cli
