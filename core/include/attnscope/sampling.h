// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace attnscope {

/// How the next token is chosen from the model's logits, as Hugging Face's generate() defines each
/// setting (its repetition-penalty processor, then its temperature, top-k and top-p warpers, in
/// that order).
struct SamplingOptions {
  double temperature = 0;  // 0: greedy, the most likely token (top-k and top-p are then ignored,
                           // as in HF's greedy search); > 0: sample from softmax(logits / T)
  int topK = 0;            // > 0: keep the tokens whose logit is at least the k-th largest (ties
                           // at the k-th are kept, as HF's TopKLogitsWarper); 0: all
  double topP = 1.0;       // < 1: keep the most likely tokens until their probability reaches
                           // topP, the one that crosses it included (HF's TopPLogitsWarper); 1: all
  double repetitionPenalty = 1.0;  // > 1 discourages every id already in the text: its logit is
                                   // divided by the penalty when positive, multiplied when not
  uint64_t seed = 0;               // the draws' std::mt19937_64 seed (see drawToken)

  bool greedy() const { return temperature <= 0; }
  /// Throws Error(InvalidArgument) naming the bad setting.
  void validate() const;
};

/// The distribution the next token is drawn from: logits [V] with the repetition penalty for the
/// ids in `previous`, then (sampling only) the temperature, top-k and top-p; softmax in double.
/// Removed tokens get exactly 0; the rest sum to 1. Throws Error(InvalidArgument) for empty logits.
std::vector<double> samplingDistribution(const std::vector<float>& logits,
                                         const std::vector<int64_t>& previous,
                                         const SamplingOptions& options);

/// The softmax of logits [V] in double, with no setting: the model's own distribution.
std::vector<double> softmaxDistribution(const std::vector<float>& logits);

/// Entropy in nats of a distribution (0·log 0 = 0).
double entropyNats(const std::vector<double>& distribution);

/// Picks the next id from samplingDistribution's result. Greedy: the most likely id (the lowest
/// such id on a tie), and no draw. Sampling: one draw u = (rng() >> 11) · 2^-53, uniform in [0, 1),
/// then the first id, in ascending id order, whose cumulative probability (summed in double)
/// exceeds u · total; the same seed gives the same ids on every machine and thread count, since
/// nothing here depends on LibTorch's generator or on threads.
int64_t drawToken(const std::vector<double>& distribution, const SamplingOptions& options,
                  std::mt19937_64& rng);

}  // namespace attnscope
