// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"

namespace attnscope {

enum class DeviceKind { Auto, Cpu, Cuda };
const char* toString(DeviceKind d);            // "auto" | "cpu" | "cuda"
DeviceKind parseDevice(const std::string& s);  // throws Error(InvalidArgument)

/// Guards applied before anything large is allocated.
struct RunLimits {
  int maxTokens = 4096;                                   // per batch item
  uint64_t memoryLimitBytes = 8ull * 1024 * 1024 * 1024;  // estimate of the run's peak tensors
  /// float32 copies of F16/BF16 weights kept by the model across runs, at most this many bytes
  /// (copies past it are widened per layer, per run, as with 0). kAutoWeightCache: what the
  /// machine's available memory leaves after this run's estimate and kWeightCacheHeadroom.
  /// 0 (a one-shot CLI run) keeps none: a copy would only raise that run's peak.
  static constexpr int64_t kAutoWeightCache = -1;
  static constexpr uint64_t kWeightCacheHeadroom = 1ull << 30;
  int64_t weightCacheBytes = 0;
  /// Bytes the caller will need per attention value the result keeps, after the run (the CLI's
  /// --json: kResultJsonBytesPerAttentionValue), counted in the estimate so that a run whose
  /// output would not fit is refused before it starts. 0: the result is only held.
  uint64_t outputBytesPerAttentionValue = 0;
};

/// Random input X ~ N(0,1) of shape (batch, seqLen, input_dim): the tutorial's set-up.
struct RandomInput {
  int batch = 1;
  int seqLen = 1;
};

/// A run's peak memory beyond the process, from the configuration and the token counts alone
/// (nothing is allocated to compute it). The run refuses when `total` is over the memory limit.
struct MemoryEstimate {
  uint64_t weights = 0;        // the parameters as held (BF16/F16 stay 2 bytes)
  uint64_t mappedWeights = 0;  // of weights, memory-mapped file pages: not in total (the kernel
                               // can drop them; opening checks them against available memory)
  uint64_t attention = 0;      // the attention kept: kept layers x batch x heads x Tq x Tk floats
  uint64_t scores = 0;         // the pre-softmax scores kept, as much again (and once more per
                               // kept score term); 0 without scores
  uint64_t perLayer = 0;       // attention (+ scores) of one layer: what each kept layer adds
  uint64_t working = 0;        // activations, one layer's temporaries (the largest compact weight
                               // widened to float32 among them), tokens and copies
  uint64_t output = 0;         // what the caller makes of the attention afterwards (--json's
                               // document and text): RunLimits::outputBytesPerAttentionValue
  uint64_t total = 0;
  int layersKept = 0;
  int layers = 0;
  int queries = 0;  // the longest item's tokens
  int keys = 0;
};

/// What to run a model on.
struct RunRequest {
  std::vector<std::string> texts;      // one batch item each (UTF-8)
  std::optional<std::string> context;  // cross-attention: keys and values come from this text
  std::optional<std::string> pair;     // a second sentence joined to each text by the tokenizer
                                       // ([CLS] A [SEP] B [SEP]), for encoders
  std::optional<std::string> target;   // encoder-decoders: teacher forcing, the decoder reads
                                       // decoder_start_token_id followed by this text's tokens
                                       // (the same target for every text)
  int generate = 0;  // encoder-decoders: then append up to this many greedy tokens to the decoder
                     // input (stopping at the end-of-sequence token) and show the attention over
                     // the result; AttentionResult::generated lists them
  std::optional<RandomInput> random;  // when set, texts are ignored
  DeviceKind device = DeviceKind::Auto;
  bool keepScores = true;       // also return the pre-softmax scores
  bool keepValueNorms = false;  // also return AttentionGroup::valueNorms (the tiny GPT, GPT-2,
                                // every decoder and encoder family: ModelInfo::supportsValueNorms;
                                // the toy layer and encoder-decoders refuse with
                                // Error(InvalidArgument))
  bool keepQueryKey = false;  // also return AttentionGroup::queryVectors, keyVectors (every family)
  bool keepScoreTerms = false;  // also return AttentionGroup::scoreTerms, each term of the scores
                                // (models whose ModelInfo::scoreTerms is not empty; others refuse
                                // with Error(InvalidArgument))
  /// Long inputs: store no attention; keep per layer what any head's weights are recomputed from
  /// exactly (AttentionGroup::source, attention_source.h), O(L·H·T·d) instead of O(L·H·T²). The
  /// forward never holds a T × T buffer. Scores are not kept (keepScores is ignored); no preview.
  bool attentionOnDemand = false;
  /// > 0: also return the logit lens (AttentionResult::logitLensIds and the rest): after each
  /// layer, the final norm and the unembedding applied to every position's residual stream, this
  /// many most probable tokens kept per layer and position. Causal language models with a head
  /// only; others refuse with Error(InvalidArgument). 0: none.
  int logitLens = 0;
  /// Also return AttentionResult::logits: the head's logits at every position (the language-model
  /// head; encoders' masked-LM head; the decoder's for encoder-decoders). Kept only when they fit
  /// what the memory limit leaves after the run (a notice says otherwise).
  bool keepLogits = false;
  /// The model layers whose attention (and scores) the result keeps, ascending and unique; empty:
  /// every layer. Every layer is still computed; the others' attention is dropped as soon as the
  /// next layer has it, so a long input to a big model fits (AttentionGroup::keptLayers).
  std::vector<int> layers;
  RunLimits limits;
  const std::atomic<bool>* cancel = nullptr;  // polled between layers and blocks; set: abandon
  /// Called on the running thread after each layer: `done` of `total` layers (an
  /// encoder-decoder's encoder layers, then its decoder's for the returned attention).
  std::function<void(int done, int total)> progress;
  /// Called once on the running thread as soon as the first kept layer of a one-stack model is
  /// done (not for encoder-decoders, not when that layer is the last): a result holding that
  /// layer's attention only (AttentionGroup::keptLayers = {layer}) with the tokens, so a window
  /// can show it while the other layers compute. Costs one copy of one layer's attention.
  std::function<void(AttentionResult preview)> preview;
};

}  // namespace attnscope
