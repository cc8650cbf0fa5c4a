// SPDX-License-Identifier: GPL-3.0-or-later
#include <cstdio>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/result_json.h"
#include "commands.h"
#include "dump_writer.h"
#include "model_options.h"

namespace attnscope::cli {
namespace {

// One step per line, like the tutorial's printouts: "qkv.size(): [30, 5, 1536]".
void printTrace(const AttentionResult& r) {
  for (std::size_t l = 0; l < r.traces.size(); ++l) {
    const LayerTrace& t = r.traces[l];
    std::printf("layer %zu (%s)\n", l, t.variant.c_str());
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
              r.modelName.c_str(), r.device.c_str(), r.group().layers(), r.group().batch(),
              r.group().heads(), r.group().queries(), r.group().keys());
  std::printf("attention %s, output %s, forward %.2f ms\n",
              r.group().attention.shapeString().c_str(), r.output.shapeString().c_str(),
              r.timings.forwardMs);
}

// "next token: ␣the 41.2%  ␣a 7.9%  ..." for language models.
void printPredictions(const AttentionResult& r) {
  for (const MaskFill& f : r.maskFills) {
    std::printf("mask at token %d:", f.position);
    for (const Prediction& p : f.predictions)
      std::printf("  %s %.1f%%", p.token.label.c_str(), 100.0 * p.probability);
    std::printf("\n");
  }
  if (r.nextToken.empty()) return;
  std::printf("next token after text 1:");
  for (const Prediction& p : r.nextToken) {
    std::printf("  %s %.1f%%", p.token.label.c_str(), 100.0 * p.probability);
  }
  std::printf("\n");
}

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli run",
              "Run a model on text (or random input) and report its attention.");
  addModelFlags(p);
  p.flag("--trace", "print the shape trace, one step per line")
      .option("--json", "FILE", "write tokens, shapes, trace, device, timings and attention")
      .option("--dump", "DIR",
              "write input/attention/output .npy, weights.safetensors, trace/tokens .json");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  const RunRequest request = requestFromFlags(p);
  const auto model = modelFromFlags(p);
  const AttentionResult result = model->run(request);
  for (const std::string& n : result.notices) std::fprintf(stderr, "notice: %s\n", n.c_str());
  printSummary(result);
  printPredictions(result);
  if (p.has("--trace")) printTrace(result);
  if (p.has("--json")) writeTextFile(p.value("--json"), resultJson(result));
  if (p.has("--dump")) writeDump(p.value("--dump"), result, *model);
  return 0;
}

}  // namespace attnscope::cli
