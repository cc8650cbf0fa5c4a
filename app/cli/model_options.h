// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "arg_parser.h"
#include "attnscope/generation.h"
#include "attnscope/model.h"
#include "attnscope/run_request.h"

namespace attnscope::cli {

/// The flags that choose a model and its input, shared by `run` and `export`.
void addModelFlags(ArgParser& parser);

/// Builds the model the flags describe. Throws UsageError or attnscope::Error.
std::shared_ptr<Model> modelFromFlags(const ArgParser& parser);
/// The model of --model-b (a second model to compare with, e.g. the same model quantized), with
/// the same memory limit. Throws UsageError without the flag.
std::shared_ptr<Model> secondModelFromFlags(const ArgParser& parser);
/// --memory-limit in bytes (MiB on the command line; default 8192 MiB). Throws UsageError.
uint64_t memoryLimitFromFlags(const ArgParser& parser);
/// Builds the request (texts, context, random input, device, limits). Throws UsageError.
RunRequest requestFromFlags(const ArgParser& parser);
/// Without --max-tokens, raises the request's token limit to the model's context length
/// (ModelInfo::maxPositions) where that is longer than the default 4096: a long-context model
/// takes the inputs it was trained for, and the memory estimate still guards. A shorter context
/// keeps 4096, so a longer text is cut to the model's last positions with a notice, not refused.
void applyContextLength(const ArgParser& parser, const Model& model, RunRequest& request);
/// The request that recomputes attention on demand (RunRequest::attentionOnDemand: each layer's
/// queries, keys and rows' normalisers are kept; no scores, no kept q and k, no matrix written
/// out).
RunRequest onDemandRequest(const RunRequest& request);
/// A long input whose attention would not fit the memory limit stored but does on demand:
/// onDemandRequest(request) with a notice on stderr that says so; nullopt otherwise (the run
/// refuses as before, or fits). notice false: only the answer.
std::optional<RunRequest> onDemandIfTooLarge(const Model& model, const RunRequest& request,
                                             bool notice = true);
/// The sampling flags of `generate` (and `export --view step`): --temperature, --top-k, --top-p,
/// --seed, --repetition-penalty. withSeed false where the model flags declare --seed already
/// (export: the toy layer's seed, read as the sampling seed by --view step).
void addSamplingFlags(ArgParser& parser, bool withSeed = true);
/// The model --model names, for generating: no toy layer, so --seed is not the toy's.
std::shared_ptr<Model> generatorFromFlags(const ArgParser& parser);
/// What they ask for: greedy without any, sampling (temperature 1 unless given) as soon as
/// --top-k, --top-p or --seed is given. Throws UsageError.
StepOptions stepOptionsFromFlags(const ArgParser& parser);
/// The most tokens `generate` writes (and the last --step of `export --view step` + 1).
constexpr int kMaxNewTokens = 4096;

/// "0,5-7" -> {0, 5, 6, 7}, sorted and unique. Throws UsageError for anything else; the model
/// checks the range.
std::vector<int> layerListFromFlag(const std::string& list);
/// "0,5-7" as sorted unique numbers; errors name `flag` and call each number a `what`.
std::vector<int> indexListFromFlag(const std::string& flag, const std::string& list,
                                   const std::string& what);

}  // namespace attnscope::cli
