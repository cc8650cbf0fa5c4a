// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/float_tensor.h"
#include "attnscope/run_request.h"
#include "attnscope/sampling.h"
#include "attnscope/token.h"

namespace attnscope {

/// What Model::startGeneration needs: the prompt and the run's limits. The generation keeps a
/// key/value cache, so each step runs one token through the layers.
struct GenerationRequest {
  std::string text;       // the prompt (at least one token)
  int maxNewTokens = 64;  // for the memory check: the cache and the kept rows of this many steps
  RunLimits limits;       // memoryLimitBytes and maxTokens apply to prompt + maxNewTokens
  DeviceKind device = DeviceKind::Auto;
  bool keepAttention = true;  // each step's GenerationStep::attention; false: none kept
  int candidates = 5;         // GenerationStep::candidates: the most likely this many
  const std::atomic<bool>* cancel = nullptr;  // polled between layers
};

/// One candidate of a step: a token and its probability before and after the sampling settings.
struct GenerationCandidate {
  Token token;
  double p = 0;       // under the distribution the token was drawn from (penalty, temperature,
                      // top-k, top-p applied); 0 where the settings removed it
  double pModel = 0;  // the model's own softmax of the logits, before any setting
};

/// What one step produced: the new token, its candidates and the attention of the query that
/// predicted it.
struct GenerationStep {
  Token token;       // the new token (the forced one when StepOptions::forcedId is set)
  int position = 0;  // its index in Generation::tokens()
  bool forced = false;
  bool end = false;         // the model's end-of-sequence token
  double entropy = 0;       // nats, of the model's distribution (before the settings)
  double entropyAfter = 0;  // nats, of the distribution the token was drawn from
  std::vector<GenerationCandidate> candidates;  // the most likely by pModel, at most
                                                // GenerationRequest::candidates
  // attention: [L, H, T_step], the last input token's attention row (the query whose output
  // predicted `token`) over the T_step = position keys up to and including itself; empty when
  // GenerationRequest::keepAttention is false.
  FloatTensor attention;
  // crossAttention: [L, H, T_source], encoder-decoders only: the same query's attention over
  // the source's tokens (Generation::sourceTokens()); empty for decoders or when
  // keepAttention is false. `attention` is then the decoder's self-attention row.
  FloatTensor crossAttention;
  double milliseconds = 0;  // the step's forward and sampling
};

/// Options of one step.
struct StepOptions {
  SamplingOptions sampling;
  std::optional<int64_t> forcedId;  // take this token instead of sampling ("what if it had written
                                    // X?"); its probabilities are still reported
};

/// A generation in progress: the prompt's tokens followed by the generated ones, with a key/value
/// cache so that a step costs one token's forward. Not thread-safe: one caller at a time (a
/// worker thread); the model's runs on other threads wait for each step, as for any run.
/// The seam for encoder-decoders (T5, BART: cross-attention keys and values computed once) and
/// for the window's Step view and logit lens.
class Generation {
 public:
  virtual ~Generation() = default;
  /// Every token so far: the prompt's, then the generated ones. Encoder-decoders: the decoder's
  /// inputs, the decoder start token (promptLength() 1) then the generated ones; the prompt text
  /// is the source (sourceTokens()).
  virtual const std::vector<Token>& tokens() const = 0;
  /// Encoder-decoders: the source's tokens, the encoder's input (run once, by the first step).
  /// Empty for decoders.
  virtual const std::vector<Token>& sourceTokens() const = 0;
  virtual int promptLength() const = 0;
  /// Whether another step fits the model's positions and RunLimits::maxTokens.
  virtual bool canStep() const = 0;
  /// Runs the newest token through the cache and picks the next one. Throws Error: ResourceLimit
  /// when !canStep(), InvalidArgument for a forced id outside the vocabulary or bad settings,
  /// Cancelled.
  virtual GenerationStep step(const StepOptions& options) = 0;
};

}  // namespace attnscope
