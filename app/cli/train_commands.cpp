// SPDX-License-Identifier: GPL-3.0-or-later
// `train`, `eval` and `sample`: the tiny GPT from the command line.
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "attnscope/tiny_gpt.h"
#include "attnscope/training.h"
#include "commands.h"
#include "file_reader.h"
#include "model_options.h"

namespace attnscope::cli {
namespace {

std::string formatDuration(double seconds) {
  const int s = static_cast<int>(std::lround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, (s / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
  return buf;
}

}  // namespace

int trainCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli train",
              "Train the chapter's character-level GPT on a UTF-8 text file.");
  p.option("--corpus", "FILE", "UTF-8 text; the first 90% trains, the last 10% validates")
      .option("--out", "FILE", "checkpoint to write (.safetensors)")
      .option("--layers", "N", "blocks; default 4")
      .option("--heads", "N", "heads per block; default 4")
      .option("--embd", "N", "n_embd; default 64")
      .option("--block", "N", "context length; default 128")
      .option("--steps", "N", "optimizer steps; default 5000")
      .option("--batch", "N", "sequences per step; default 32")
      .option("--lr", "X", "AdamW learning rate; default 1e-3")
      .option("--seed", "N", "seed; default 1337")
      .option("--eval-every", "N", "steps between validation estimates; default 250")
      .option("--snapshot-every", "K", "also write FILE.stepNNNNNN.safetensors every K steps")
      .option("--threads", "N", "CPU threads; default all cores")
      .option("--memory-limit", "MIB", "refuse training estimated above this; default 8192");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (!p.has("--corpus")) throw UsageError("--corpus FILE is required");
  if (!p.has("--out")) throw UsageError("--out FILE.safetensors is required");
  // Before training, not after it: a folder or an unwritable place would lose the work.
  checkOutputPath(p.value("--out"), "--out");
  TrainOptions o;
  o.model.nLayer = static_cast<int>(p.integer("--layers", 4, 1, 64));
  o.model.nHead = static_cast<int>(p.integer("--heads", 4, 1, 256));
  o.model.nEmbd = static_cast<int>(p.integer("--embd", 64, 1, 8192));
  o.model.blockSize = static_cast<int>(p.integer("--block", 128, 2, 65536));
  if (o.model.nEmbd % o.model.nHead != 0) {
    throw UsageError("--heads (" + std::to_string(o.model.nHead) + ") must divide --embd (" +
                     std::to_string(o.model.nEmbd) + ")");
  }
  o.steps = static_cast<int>(p.integer("--steps", 5000, 1, 100000000));
  o.batch = static_cast<int>(p.integer("--batch", 32, 1, 65536));
  o.learningRate = p.number("--lr", 1e-3, 1e-9, 10);
  o.seed = static_cast<uint64_t>(p.integer("--seed", 1337, 0, 1ll << 62));
  o.evalEvery = static_cast<int>(p.integer("--eval-every", 250, 1, 100000000));
  o.snapshotEvery = static_cast<int>(p.integer("--snapshot-every", 0, 0, 100000000));
  o.memoryLimitBytes = memoryLimitFromFlags(p);
  const std::string out = p.value("--out");
  if (o.snapshotEvery > 0) {
    std::string stem = out;
    if (stem.size() > 12 && stem.compare(stem.size() - 12, 12, ".safetensors") == 0)
      stem.resize(stem.size() - 12);
    o.snapshotPattern = stem + ".step{step}.safetensors";
  }
  if (p.has("--threads")) setThreadCount(static_cast<int>(p.integer("--threads", 0, 1, 1024)));
  const std::string corpus = readTextFile(p.value("--corpus"), "--corpus");

  const bool tty = isatty(STDERR_FILENO);
  TrainCallbacks cb;
  double lastVal = std::nan("");
  cb.onProgress = [&](const TrainProgress& pr) {
    if (!std::isnan(pr.valLoss)) lastVal = pr.valLoss;
    const int width = 24,
              filled = static_cast<int>(width * static_cast<double>(pr.step) / pr.steps);
    std::string bar = std::string(static_cast<std::size_t>(filled), '=') +
                      std::string(static_cast<std::size_t>(width - filled), ' ');
    char val[32] = "  -  ";
    if (!std::isnan(lastVal)) std::snprintf(val, sizeof val, "%.4f", lastVal);
    std::fprintf(stderr, "%sstep %d/%d [%s] train %.4f val %s  %s elapsed, ETA %s%s",
                 tty ? "\r" : "", pr.step, pr.steps, bar.c_str(), pr.trainLoss, val,
                 formatDuration(pr.elapsedSeconds).c_str(), formatDuration(pr.etaSeconds).c_str(),
                 tty ? "" : "\n");
    std::fflush(stderr);
  };
  const TrainResult r = trainTinyGpt(corpus, o, cb);
  if (tty) std::fputc('\n', stderr);
  r.model.save(out);
  std::printf("trained %d steps; validation loss %.4f nats/char on the last 10%%; wrote %s\n",
              r.stepsDone, r.finalValLoss, out.c_str());
  return 0;
}

int evalCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli eval",
              "Print a tiny GPT's validation loss on the last 10% of a text file.");
  p.option("--model", "FILE|default", "checkpoint (.safetensors) or the bundled default model")
      .option("--corpus", "FILE", "UTF-8 text")
      .option("--windows", "N", "evaluate at most N windows of block_size (default: all)");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (!p.has("--model")) throw UsageError("--model FILE|default is required");
  if (!p.has("--corpus")) throw UsageError("--corpus FILE is required");
  const TinyGpt model = TinyGpt::open(p.value("--model"));
  const std::string corpus = readTextFile(p.value("--corpus"), "--corpus");
  const double loss = model.validationLoss(validationSplit(corpus),
                                           static_cast<int>(p.integer("--windows", 0, 0, 1 << 30)));
  std::printf("validation loss %.4f nats/char (last 10%% of %s)\n", loss,
              p.value("--corpus").c_str());
  return 0;
}

int sampleCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli sample", "Generate text with a tiny GPT, as proof that it works.");
  p.option("--model", "FILE|default", "checkpoint (.safetensors) or the bundled default model")
      .option("--prompt", "TEXT", "text to continue (default: a newline)")
      .option("--tokens", "N", "characters to generate; default 200")
      .option("--seed", "N", "sampling seed; default 0");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (!p.has("--model")) throw UsageError("--model FILE|default is required");
  const TinyGpt model = TinyGpt::open(p.value("--model"));
  const std::string prompt = p.value("--prompt", "\n");
  const std::string text =
      model.sample(prompt, static_cast<int>(p.integer("--tokens", 200, 0, 1000000)),
                   static_cast<uint64_t>(p.integer("--seed", 0, 0, 1ll << 62)));
  std::printf("%s%s\n", prompt.c_str(), text.c_str());
  return 0;
}

}  // namespace attnscope::cli
