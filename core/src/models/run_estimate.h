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
MemoryEstimate estimateRunMemory(const ModelInfo& mi, uint64_t activationBytesPerToken,
                                 uint64_t widening, const RunShape& shape);

/// An upper bound on a run's multiply-adds ×2, from the request before tokenizing (no more tokens
/// than bytes, plus a start and an end token; two bytes a parameter, so F16 weights count
/// double), for choosing the thread count; -1 where not worth bounding (targets, generation,
/// a context).
double runWorkBound(const RunRequest& request, const ModelInfo& mi);

}  // namespace attnscope
