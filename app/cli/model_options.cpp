// SPDX-License-Identifier: GPL-3.0-or-later
#include "model_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "attnscope/model_spec.h"
#include "attnscope/runtime.h"
#include "attnscope/safetensors.h"
#include "attnscope/toy_config.h"
#include "file_reader.h"

namespace attnscope::cli {

void addModelFlags(ArgParser& p) {
  p.option("--text", "TEXT", "input sentence; repeat for a batch", true)
      .option("--text-file", "FILE",
              "input text read from a UTF-8 file, as it is (a long input: a command line holds "
              "at most 128 KiB an argument); repeat for a batch, after any --text",
              true)
      .option("--context", "TEXT", "cross-attention: keys and values come from this text")
      .option("--pair", "TEXT",
              "encoders: a second sentence, joined as the tokenizer's template says ([CLS] A [SEP] "
              "B [SEP])")
      .option("--target", "TEXT",
              "encoder-decoders (t5, bart, marian): the decoder reads decoder_start_token_id and "
              "this text "
              "(teacher forcing)")
      .option("--model", "M",
              "toy (the configurable layer; default), default (the bundled tiny GPT), a tiny-GPT "
              "FILE.safetensors, a Hugging Face model folder (attnscope-cli models lists the "
              "model types it opens), or a cached model name (gpt2, distilgpt2, "
              "openai-community/gpt2)")
      .option("--variant", "V", "fused (tutorial) or per-head (textbook); default fused")
      .option("--input-dim", "N", "embedding width fed into the layer; default 64")
      .option("--d-model", "N", "n_embd: width of q, k, v and output; default 64")
      .option("--heads", "N", "number of heads; must divide d-model; default 4")
      .option("--mask", "M", "none (encoder) or causal (decoder); default none")
      .option("--scale", "S", "head: 1/sqrt(head_size) (default); embd: 1/sqrt(n_embd)")
      .option("--tokenizer", "T", "char (default) or word")
      .option("--seed", "N",
              "seed of the random weights and embeddings; default 0 (export --view step: the "
              "sampling seed)")
      .option("--weights", "FILE", "load the layer's weights from a .safetensors state dict")
      .option("--batch", "N", "random input: batch size (with --seq-len)")
      .option("--seq-len", "N", "random input: tokens per item (with --batch)")
      .option("--device", "D", "auto (default), cpu or cuda")
      .option("--threads", "N", "CPU threads; default all cores")
      .option("--max-tokens", "N",
              "refuse longer texts; default the model's context length, at least 4096")
      .option("--memory-limit", "MIB", "refuse runs estimated above this; default 8192")
      .option("--layers", "LIST",
              "keep the attention of these layers only, e.g. 0,5-7 (all are computed); for long "
              "inputs to big models")
      .flag("--progress", "print the layers done to stderr as the run goes");
}

namespace {

// Flags that configure the toy layer; a pretrained model takes its configuration from its files.
const char* const kToyOnlyFlags[] = {"--variant", "--input-dim", "--d-model", "--heads",  "--mask",
                                     "--scale",   "--tokenizer", "--seed",    "--weights"};

}  // namespace

void addSamplingFlags(ArgParser& p, bool withSeed) {
  p.option("--temperature", "T", "0 (the default): greedy; > 0: sample from softmax(logits / T)")
      .option("--top-k", "K", "sample from the K most likely tokens only (sampling)")
      .option("--top-p", "P", "sample from the most likely tokens up to probability P (sampling)")
      .option("--repetition-penalty", "R",
              "divide positive logits of tokens already in the text by R, multiply negative ones");
  if (withSeed) p.option("--seed", "N", "the sampling seed; default 0 (same seed, same text)");
}

std::shared_ptr<Model> generatorFromFlags(const ArgParser& p) {
  for (const char* flag : kToyOnlyFlags) {
    if (p.has(flag) && std::string(flag) != "--seed")
      throw UsageError(std::string(flag) + " configures the toy layer, which does not generate");
  }
  ModelSpec spec;
  spec.source = p.value("--model", "toy");
  spec.memoryLimitBytes = memoryLimitFromFlags(p);
  if (p.has("--threads")) setThreadCount(static_cast<int>(p.integer("--threads", 0, 1, 1024)));
  return openModel(spec);
}

StepOptions stepOptionsFromFlags(const ArgParser& p) {
  StepOptions step;
  SamplingOptions& s = step.sampling;
  // Sampling as soon as a sampling setting is given; the temperature then defaults to 1.
  const bool sample = p.has("--top-k") || p.has("--top-p") || p.has("--seed");
  s.temperature = p.number("--temperature", sample ? 1.0 : 0.0, 0.0, 1e6);
  if (p.has("--temperature") && s.temperature == 0 && sample)
    throw UsageError("--temperature 0 is greedy: --top-k, --top-p and --seed need sampling");
  s.topK = static_cast<int>(p.integer("--top-k", 0, 1, 1 << 30));
  s.topP = p.number("--top-p", 1.0, 1e-9, 1.0);
  s.seed = static_cast<uint64_t>(p.integer("--seed", 0, 0, (1ll << 62)));
  s.repetitionPenalty = p.number("--repetition-penalty", 1.0, 1e-6, 1e6);
  return step;
}

uint64_t memoryLimitFromFlags(const ArgParser& p) {
  return static_cast<uint64_t>(p.integer("--memory-limit", 8192, 1, 1ll << 30)) * 1024 * 1024;
}

std::shared_ptr<Model> secondModelFromFlags(const ArgParser& p) {
  if (!p.has("--model-b")) throw UsageError("comparing two models needs --model-b");
  ModelSpec spec;
  spec.source = p.value("--model-b");
  spec.memoryLimitBytes = memoryLimitFromFlags(p);
  return openModel(spec);
}

std::shared_ptr<Model> modelFromFlags(const ArgParser& p) {
  ModelSpec spec;
  spec.source = p.value("--model", "toy");
  spec.memoryLimitBytes = memoryLimitFromFlags(p);
  if (p.has("--threads")) setThreadCount(static_cast<int>(p.integer("--threads", 0, 1, 1024)));
  if (spec.source != "toy") {
    for (const char* flag : kToyOnlyFlags) {
      if (p.has(flag)) {
        throw UsageError(std::string(flag) + " configures the toy layer only; --model " +
                         spec.source + " takes its configuration from its own files (leave out " +
                         flag + ")");
      }
    }
    return openModel(spec);
  }
  ToyConfig& c = spec.toy;
  c.variant = parseVariant(p.value("--variant", "fused"));
  c.inputDim = static_cast<int>(p.integer("--input-dim", 64, 1, 65536));
  c.dModel = static_cast<int>(p.integer("--d-model", 64, 1, 65536));
  c.heads = static_cast<int>(p.integer("--heads", 4, 1, 65536));
  c.mask = parseMask(p.value("--mask", "none"));
  c.scale = parseScale(p.value("--scale", "head"));
  c.tokenizer = parseTokenizer(p.value("--tokenizer", "char"));
  c.seed = static_cast<uint64_t>(p.integer("--seed", 0, 0, (1ll << 62)));
  if (p.has("--weights")) {
    // The sizes are checked before the file is read or the layer built.
    c.checkMemory(spec.memoryLimitBytes);
    const SafetensorsFile file = SafetensorsFile::open(p.value("--weights"));
    std::vector<NamedTensor> weights;
    for (const TensorInfo& info : file.tensors())
      weights.push_back({info.name, file.readFloat(info.name)});
    return makeToyModel(c, weights);
  }
  return openModel(spec);
}

RunRequest requestFromFlags(const ArgParser& p) {
  RunRequest r;
  r.texts = p.values("--text");
  for (const std::string& path : p.values("--text-file"))
    r.texts.push_back(readTextFile(path, "--text-file"));
  if (p.has("--context")) r.context = p.value("--context");
  if (p.has("--pair")) r.pair = p.value("--pair");
  if (p.has("--target")) r.target = p.value("--target");
  if (p.has("--batch") != p.has("--seq-len")) {
    throw UsageError(
        std::string(p.has("--batch") ? "--batch needs --seq-len" : "--seq-len needs --batch"));
  }
  if (p.has("--batch")) {
    if (!r.texts.empty()) throw UsageError("--batch/--seq-len give random input; leave out --text");
    if (r.context) throw UsageError("--context needs --text, not random input");
    r.random = RandomInput{static_cast<int>(p.integer("--batch", 1, 1, 1 << 20)),
                           static_cast<int>(p.integer("--seq-len", 1, 1, 1 << 20))};
  } else if (r.texts.empty()) {
    throw UsageError("give --text TEXT (repeatable), or --batch N --seq-len N for random input");
  }
  r.device = parseDevice(p.value("--device", "auto"));
  r.limits.maxTokens = static_cast<int>(p.integer("--max-tokens", 4096, 1, 1 << 20));
  r.limits.memoryLimitBytes = memoryLimitFromFlags(p);
  if (p.has("--layers")) r.layers = layerListFromFlag(p.value("--layers"));
  if (p.has("--progress")) {
    // On a terminal one line that updates; into a file or pipe a line per layer.
    const bool terminal = isatty(fileno(stderr)) != 0;
    r.progress = [terminal](int done, int total) {
      std::fprintf(stderr, terminal ? "\rlayers done: %d of %d%s" : "layers done: %d of %d%s\n",
                   done, total, terminal && done == total ? "\n" : "");
      std::fflush(stderr);
    };
  }
  return r;
}

void applyContextLength(const ArgParser& p, const Model& model, RunRequest& request) {
  if (!p.has("--max-tokens"))
    request.limits.maxTokens = std::max(request.limits.maxTokens, model.info().maxPositions);
}

RunRequest onDemandRequest(const RunRequest& request) {
  RunRequest onDemand = request;
  onDemand.attentionOnDemand = true;
  onDemand.keepScores = false;
  onDemand.keepQueryKey = false;
  onDemand.limits.outputBytesPerAttentionValue = 0;
  return onDemand;
}

std::optional<RunRequest> onDemandIfTooLarge(const Model& model, const RunRequest& request,
                                             bool notice) {
  if (request.attentionOnDemand) return std::nullopt;
  const MemoryEstimate stored = model.estimate(request);
  if (stored.total <= request.limits.memoryLimitBytes) return std::nullopt;
  RunRequest onDemand = onDemandRequest(request);
  const MemoryEstimate kept = model.estimate(onDemand);
  if (kept.total > request.limits.memoryLimitBytes) return std::nullopt;
  if (notice)
    std::fprintf(stderr,
                 "notice: attention recomputed on demand: %.1f MB kept instead of %.1f MB "
                 "(over the memory limit of %.0f MB)\n",
                 static_cast<double>(kept.attention) / 1e6,
                 static_cast<double>(stored.attention + stored.scores) / 1e6,
                 static_cast<double>(request.limits.memoryLimitBytes) / 1e6);
  return onDemand;
}

std::vector<int> layerListFromFlag(const std::string& list) {
  return indexListFromFlag("--layers", list, "layer");
}

std::vector<int> indexListFromFlag(const std::string& flag, const std::string& list,
                                   const std::string& what) {
  // Every part is checked and the ranges merged before anything is expanded: 14,000 copies of
  // 0-999999 once took 4.2 GB; merged, the list is at most the million numbers the syntax allows.
  std::vector<std::pair<int, int>> ranges;
  const auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError(flag + ": '" + s + "' is not a " + what +
                       " number (give a list like 0,5-7)");
    return std::stoi(s);
  };
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string part = list.substr(start, comma - start);
    const std::size_t dash = part.find('-');
    const int lo = number(dash == std::string::npos ? part : part.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo) throw UsageError(flag + ": the range '" + part + "' runs backwards");
    ranges.emplace_back(lo, hi);
    start = comma + 1;
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<int> out;
  int next = 0;  // the first number not yet in `out`
  for (const auto& [lo, hi] : ranges) {
    for (int l = std::max(lo, next); l <= hi; ++l) out.push_back(l);
    next = std::max(next, hi + 1);
  }
  return out;
}

}  // namespace attnscope::cli
