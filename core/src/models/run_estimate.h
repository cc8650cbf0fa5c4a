// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

#include "attnscope/model.h"
#include "attnscope/run_request.h"

namespace attnscope {

/// The sizes a run's memory depends on, once its text is tokenized.
struct RunShape {
  int64_t batch = 1;
  int64_t queries = 0;  // the longest item's tokens
  int64_t keys = 0;     // the longest item's keys (queries, or a context's tokens)
  bool keepScores = false;
  int64_t keptLayers = 0;  // layers whose attention the result keeps
  bool keepQueryKey = false;
  int64_t targets = 0;               // encoder-decoders: decoder inputs, generated tokens included
  uint64_t outputBytesPerValue = 0;  // RunLimits::outputBytesPerAttentionValue
  int64_t scoreTerms = 0;            // score terms kept, each as large as the attention
  bool onDemand = false;             // RunRequest::attentionOnDemand: no attention held
};

/// The run's peak memory beyond the process: parameters, the [kept layers, B, H, Tq, Tk] result
/// (twice with scores), the kept queries and keys (about d_model floats per token and layer
/// each, counted as working memory), one layer's temporaries and the activations
/// (activationBytesPerToken, the family's) and `widening`, the float32 copy of a compact weight
/// while a layer uses it; for an encoder-decoder also the decoder's [Ld, B, H, Tt, Tt + Tk] self-
/// and cross-attention. Weights that are memory-mapped file pages (mi.mappedBytes) are reported
/// but not counted in the total: the kernel drops and re-reads them as needed, and opening the
/// model checked them against the machine's available memory. The output the caller makes of the
/// attention afterwards (shape.outputBytesPerValue per kept value) counts in the total too. Sizes
/// that overflow saturate.
/// On demand (shape.onDemand) no [.., Tq, Tk] tensor is held: each kept layer keeps its queries
/// and keys (d_model floats per token each, as above) and its rows' normalisers; the mask is held
/// as runs of visible keys (AttentionMask), not as a [B, 1, Tq, Tk] tensor.
MemoryEstimate estimateRunMemory(const ModelInfo& mi, uint64_t activationBytesPerToken,
                                 uint64_t widening, const RunShape& shape);

/// The logit lens's share of a run (RunRequest::logitLens = k) over B items of T tokens: kept,
/// the top k ids and probabilities ([L, B, T, k] each), the right answer's probability and the
/// entropy ([L, B, T] each), float32, and the labels of at most min(L·B·T·k, V) distinct ids;
/// while it runs, one layer's final-normed hidden states ([B, T, d_model]) and a block of rows of
/// the vocabulary softmax (blockValues floats, at least one row of V) as logits, probabilities
/// and their CPU copy. Never [L, T, V]. 0 for k <= 0. Saturates like estimateRunMemory.
uint64_t logitLensBytes(const ModelInfo& mi, int64_t B, int64_t T, int64_t k, int64_t vocabulary,
                        int64_t blockValues);

/// An upper bound on a run's multiply-adds ×2, from the request before tokenizing (no more tokens
/// than bytes, plus a start and an end token; two bytes a parameter, so F16 weights count
/// double), for choosing the thread count; -1 where not worth bounding (targets, generation,
/// a context).
double runWorkBound(const RunRequest& request, const ModelInfo& mi);

}  // namespace attnscope
