// SPDX-License-Identifier: GPL-3.0-or-later
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "attnscope/error.h"
#include "attnscope/training.h"
#include "attnscope/utf8.h"
#include "models/tiny_gpt_state.h"
#include "nn/attention_mask.h"
#include "runtime/batch_input.h"
#include "runtime/torch_errors.h"

namespace attnscope {
namespace {

std::size_t splitPoint(const std::string& corpus) {
  std::size_t cut = corpus.size() * 9 / 10;
  while (cut < corpus.size() && (static_cast<unsigned char>(corpus[cut]) & 0xC0) == 0x80) ++cut;
  return cut;
}

std::string expandStep(const std::string& pattern, int step) {
  std::string out = pattern;
  const auto pos = out.find("{step}");
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06d", step);
  if (pos != std::string::npos)
    out.replace(pos, 6, buf);
  else
    out += std::string(".step") + buf;
  return out;
}

}  // namespace

std::string validationSplit(const std::string& corpus) { return corpus.substr(splitPoint(corpus)); }

uint64_t estimateTrainingBytes(const TinyGptConfig& c, int batch, uint64_t corpusChars) {
  // In doubles: the product of hostile sizes must not wrap around to a small number.
  const double C = c.nEmbd, T = c.blockSize, V = c.vocabSize, L = c.nLayer, H = c.nHead, B = batch;
  const double params = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + C * V + V;
  // Per layer, kept for backward: scores, softmax and dropout of every head, and about 16
  // [B, T, C] tensors (norms, q/k/v, head outputs, the 4C-wide MLP); logits with their softmax.
  const double activations = L * (3 * B * H * T * T + 16 * B * T * C) + 3 * B * T * V;
  const double bytes = 4 * (4 * params + activations) + 4.0 * static_cast<double>(corpusChars);
  return bytes >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(bytes);
}

namespace {

TrainResult trainUnguarded(const std::string& corpus, const TrainOptions& o,
                           const TrainCallbacks& cb) {
  using Clock = std::chrono::steady_clock;
  requireValidUtf8(corpus, "the corpus");
  if (o.steps <= 0 || o.batch <= 0 || !(o.learningRate > 0)) {
    throw Error(ErrorKind::InvalidArgument, "steps, batch and learning rate must be positive");
  }
  // The tiny GPT's vocabulary is the corpus's characters, and a checkpoint refuses NUL.
  if (const auto nul = corpus.find('\0'); nul != std::string::npos) {
    throw Error(ErrorKind::InvalidArgument,
                "the corpus holds a NUL byte at byte " + std::to_string(nul) + ": not a text file");
  }
  TinyGptConfig config = o.model;
  std::vector<std::string> vocab = TinyGpt::vocabularyOf(corpus);
  config.vocabSize = static_cast<int>(vocab.size());
  config.validate();
  // Before the model, the optimizer or a batch exists: a block of 65536 at batch 32 would need
  // terabytes for its attention alone.
  checkMemory(estimateTrainingBytes(config, o.batch, corpus.size()), o.memoryLimitBytes,
              "training " + config.describe() + " at batch " + std::to_string(o.batch));
  TinyGpt model = TinyGpt::create(config, std::move(vocab), o.seed);
  TinyGpt::State& s = *model.state();
  const std::size_t cut = splitPoint(corpus);
  const std::vector<int32_t> train = s.encodeKnown(std::string_view(corpus).substr(0, cut));
  const std::string val = corpus.substr(cut);
  const int64_t block = s.config.blockSize;
  if (static_cast<int64_t>(train.size()) <= block + 1 ||
      static_cast<int64_t>(s.encodeKnown(val).size()) <= block + 1) {
    throw Error(ErrorKind::InvalidArgument, "the corpus is too small for block " +
                                                std::to_string(block) +
                                                ": each of its 90%/10% "
                                                "splits needs more than " +
                                                std::to_string(block + 1) + " characters");
  }

  torch::optim::AdamW optimizer(
      s.module->parameters(),
      torch::optim::AdamWOptions(o.learningRate).weight_decay(o.weightDecay));
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int64_t> offset(0, static_cast<int64_t>(train.size()) - block - 1);
  const torch::Tensor data = torch::from_blob(const_cast<int32_t*>(train.data()),
                                              {static_cast<int64_t>(train.size())}, torch::kInt);
  const torch::Tensor mask = causalMask(block);

  TrainResult result{model, 0, false, 0, {}};
  const auto t0 = Clock::now();
  double lossSum = 0;
  int lossCount = 0;
  const int reportEvery = std::max(1, std::min(10, o.steps / 100));
  for (int step = 1; step <= o.steps; ++step) {
    if (cb.cancel && cb.cancel->load()) {
      result.cancelled = true;
      break;
    }
    std::vector<torch::Tensor> xs, ys;
    for (int b = 0; b < o.batch; ++b) {
      const int64_t at = offset(rng);
      xs.push_back(data.narrow(0, at, block));
      ys.push_back(data.narrow(0, at + 1, block));
    }
    torch::Tensor loss;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.module->train();
      const torch::Tensor logits = s.module->forward(torch::stack(xs).to(torch::kLong), mask);
      loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                                  torch::stack(ys).to(torch::kLong).reshape({-1}));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
    }
    lossSum += loss.item<double>();
    ++lossCount;
    result.stepsDone = step;

    const bool evalNow = (o.evalEvery > 0 && step % o.evalEvery == 0) || step == o.steps;
    TrainProgress p;
    p.step = step;
    p.steps = o.steps;
    if (evalNow) {
      p.valLoss = model.validationLoss(val, o.evalWindows);
      result.valCurve.emplace_back(step, p.valLoss);
      if (cb.onEval) cb.onEval(step, model.clone());
    }
    if (o.snapshotEvery > 0 && step % o.snapshotEvery == 0) {
      if (!o.snapshotPattern.empty()) model.save(expandStep(o.snapshotPattern, step));
      if (cb.onSnapshot) cb.onSnapshot(step, model.clone());
    }
    if (step % reportEvery == 0 || evalNow) {
      p.trainLoss = lossSum / lossCount;
      lossSum = 0;
      lossCount = 0;
      p.elapsedSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
      p.etaSeconds = p.elapsedSeconds / step * (o.steps - step);
      if (cb.onProgress) cb.onProgress(p);
    }
  }
  // A stopped run must end promptly, and the full pass over the validation split takes as long as
  // dozens of steps: report the last estimate instead.
  if (result.cancelled) {
    result.finalValLoss = result.valCurve.empty() ? std::numeric_limits<double>::quiet_NaN()
                                                  : result.valCurve.back().second;
  } else {
    result.finalValLoss = model.validationLoss(val, 2048);
  }
  return result;
}

}  // namespace

TrainResult trainTinyGpt(const std::string& corpus, const TrainOptions& o,
                         const TrainCallbacks& cb) {
  // LibTorch's out-of-memory error becomes one line, not a backtrace.
  return withTorchErrors("training", [&] { return trainUnguarded(corpus, o, cb); });
}

}  // namespace attnscope
