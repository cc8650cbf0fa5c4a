// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "attnscope/tiny_gpt.h"

namespace attnscope {

struct TrainOptions {
  TinyGptConfig model;  // vocabSize is taken from the corpus
  int steps = 5000;
  int batch = 32;
  double learningRate = 1e-3;
  double weightDecay = 0.01;  // AdamW's default
  uint64_t seed = 1337;
  int evalEvery = 250;          // steps between validation estimates (and GUI weight updates)
  int evalWindows = 64;         // validation windows per estimate during training
  int snapshotEvery = 0;        // 0: none; else keep a snapshot every K steps
  std::string snapshotPattern;  // "run.step{step}.safetensors": also write snapshots to disk
  uint64_t memoryLimitBytes = 8ull << 30;  // refuse before allocating when the estimate is above
};

/// Peak bytes of training a tiny GPT: weights, gradients and AdamW's two moments, one step's
/// activations kept for backward (attention [batch, heads, block, block] and the block's
/// activations per layer, logits [batch, block, vocab]), and the corpus as token ids.
uint64_t estimateTrainingBytes(const TinyGptConfig& config, int batch, uint64_t corpusChars);

struct TrainProgress {
  int step = 0;
  int steps = 0;
  double trainLoss = 0;  // mean over the steps since the last report
  double valLoss = std::numeric_limits<double>::quiet_NaN();  // NaN until estimated
  double elapsedSeconds = 0;
  double etaSeconds = 0;
};

struct TrainCallbacks {
  std::function<void(const TrainProgress&)> onProgress;      // every few steps
  std::function<void(int step, const TinyGpt&)> onEval;      // a snapshot at each validation
  std::function<void(int step, const TinyGpt&)> onSnapshot;  // every snapshotEvery steps
  const std::atomic<bool>* cancel = nullptr;
};

struct TrainResult {
  TinyGpt model;
  int stepsDone = 0;
  bool cancelled = false;
  double finalValLoss = 0;  // over the whole validation split (up to 2048 windows); when
                            // cancelled, the last estimate during training (NaN if none)
  std::vector<std::pair<int, double>> valCurve;
};

/// Trains on the first 90% of the text and validates on the last 10% (nats per character).
/// Deterministic for a seed on the CPU with a fixed thread count. Throws Error(InvalidArgument)
/// for a corpus too small for the block size, or invalid UTF-8.
TrainResult trainTinyGpt(const std::string& corpus, const TrainOptions& options,
                         const TrainCallbacks& callbacks = {});

/// The validation split of a corpus: its last 10%, starting at a character boundary.
std::string validationSplit(const std::string& corpus);

}  // namespace attnscope
