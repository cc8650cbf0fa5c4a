// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/run_estimate.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnscope/token.h"

namespace attnscope {

MemoryEstimate estimateRunMemory(const ModelInfo& mi, uint64_t activationBytesPerToken,
                                 uint64_t widening, const RunShape& shape) {
  const int64_t B = shape.batch, Tq = shape.queries, Tk = shape.keys, Tt = shape.targets;
  const int64_t keptLayers = shape.keptLayers;
  const bool keepScores = shape.keepScores;
  // In doubles: hostile sizes (a million items of a million tokens) must not wrap around to a
  // small number that passes the limit.
  const auto bytes = [](double v) {
    return v >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(v);
  };
  const double perCell = static_cast<double>(B) * mi.heads * 4;
  const double layerAttention = perCell * Tq * Tk;
  double attention = layerAttention * keptLayers;
  double perLayer = layerAttention * (keepScores ? 2 : 1);
  // One layer's scores while its softmax is written, and a copy on the way off another device
  // (or the buffer of the layers that are not kept).
  double transient = layerAttention * 2;
  double tokens = static_cast<double>(Tq + Tk);
  if (mi.encoderDecoder()) {
    // The decoder's self-attention [Tt, Tt] and cross-attention [Tt, Tk] in every decoder layer.
    const double decoderLayer = perCell * Tt * (Tt + Tk);
    attention += decoderLayer * mi.decoderLayers;
    transient = std::max(transient, decoderLayer * 2);
    tokens += static_cast<double>(2 * Tt);
    perLayer = 0;  // an encoder-decoder keeps every layer of both stacks
  }
  // Kept score terms (DeBERTa's c2c, c2p, p2c) are one more attention-sized tensor each, and
  // one layer's of each is written on the device before it is copied back.
  const double terms = static_cast<double>(shape.scoreTerms);
  perLayer += layerAttention * terms;
  transient += layerAttention * terms;
  if (shape.onDemand) {
    // Per kept layer: q ([B, H, Tq, hd], about d_model floats a token), k once per key/value head
    // (grouped-query keys are kept unrepeated: d_model · kvHeads / heads floats a token) and
    // [B, H, Tq] normalisers; the mask is each row's run of visible keys (two ints a row, shared
    // by the layers: no [B, 1, Tq, Tk] tensor), and a block of at most 256 rows of scores and
    // their softmax per thread is all the kernel adds. Measured: Llama-3.2-1B shapes at
    // T = 8192 keep 1.359 GB, which this gives to the byte.
    const double keyShare = static_cast<double>(mi.kvHeadsOrHeads()) / std::max(1, mi.heads);
    const double keptPerLayer =
        static_cast<double>(B) *
        ((Tq + Tk * keyShare) * static_cast<double>(mi.dModel) + mi.heads * Tq) * 4;
    attention = keptPerLayer * keptLayers;
    // No T × T tensor is left to dwarf them, so the activations count each token once: a
    // self-attention's keys are its queries (Tq + Tk counted them twice; measured, Llama shapes
    // of width 2048 at T = 32,768 peak at 4.5 GB of run allocations where T tokens count 6.1).
    if (!mi.encoderDecoder()) tokens = static_cast<double>(std::max(Tq, Tk));
    perLayer = keptPerLayer;
    transient =
        static_cast<double>(B) * Tq * 8 + 2.0 * 256 * Tk * 4 * std::max(1, at::get_num_threads());
  }
  const double scores =
      shape.onDemand ? 0.0 : (keepScores ? attention : 0) + layerAttention * keptLayers * terms;
  // attention is in bytes, 4 per float value.
  const double output = attention / 4 * static_cast<double>(shape.outputBytesPerValue);
  // The kept q and k counted as d_model floats per token and layer, the copy back from a device
  // as one more layer. That assumes heads × head_dim = d_model, which does not hold everywhere:
  // Qwen3 gives head_dim on its own and T5 has num_heads × d_kv, so there it is an approximation.
  const double queryKey = shape.keepQueryKey
                              ? static_cast<double>(B) * (Tq + Tk) * mi.dModel * 4 * (mi.layers + 1)
                              : 0.0;
  const double activations =
      static_cast<double>(B) * tokens * static_cast<double>(activationBytesPerToken);
  // The tokens themselves (text, label, ids), and the input and output copied into the result.
  const double tokenBytes = static_cast<double>(B) * tokens * (sizeof(Token) + 16);
  MemoryEstimate e;
  e.weights = mi.parameterBytes;
  e.mappedWeights = std::min(mi.mappedBytes, mi.parameterBytes);
  e.attention = bytes(attention);
  e.scores = bytes(scores);
  e.perLayer = bytes(perLayer);
  const double working =
      transient + queryKey + activations + tokenBytes + static_cast<double>(widening);
  e.working = bytes(working);
  e.output = bytes(output);
  e.total = bytes(static_cast<double>(e.weights - e.mappedWeights) + attention + scores + working +
                  output);
  e.layersKept = static_cast<int>(keptLayers);
  e.layers = mi.layers;
  e.queries = static_cast<int>(std::min<int64_t>(Tq, std::numeric_limits<int>::max()));
  e.keys = static_cast<int>(std::min<int64_t>(Tk, std::numeric_limits<int>::max()));
  return e;
}

uint64_t logitLensBytes(const ModelInfo& mi, int64_t B, int64_t T, int64_t k, int64_t vocabulary,
                        int64_t blockValues) {
  if (k <= 0 || B <= 0 || T <= 0) return 0;
  const double cells = static_cast<double>(mi.layers) * static_cast<double>(B) * T;
  const double V = static_cast<double>(std::max<int64_t>(vocabulary, 1));
  const double kept = cells * (2.0 * static_cast<double>(k) + 2) * 4;
  const double labels =
      std::min(cells * static_cast<double>(k), V) * static_cast<double>(sizeof(Token) + 16);
  const double rows = std::min(static_cast<double>(B) * T,
                               std::max(1.0, std::floor(static_cast<double>(blockValues) / V)));
  const double working = static_cast<double>(B) * T * mi.dModel * 4 + 3 * rows * V * 4;
  const double total = kept + labels + working;
  return total >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(total);
}

double runWorkBound(const RunRequest& request, const ModelInfo& mi) {
  if (request.target || request.generate > 0 || request.context) return -1;  // not worth bounding
  double B = 1, T = 0;
  if (request.random) {
    B = request.random->batch;
    T = request.random->seqLen;
  } else {
    B = std::max<double>(1, static_cast<double>(request.texts.size()));
    for (const std::string& t : request.texts) T = std::max(T, static_cast<double>(t.size()) + 2);
    if (request.pair) T += static_cast<double>(request.pair->size()) + 1;
  }
  const double params = static_cast<double>(mi.parameterBytes) / 2,
               layers = mi.layers + mi.decoderLayers;
  return 2 * params * B * T + 4 * B * T * T * mi.dModel * layers;
}

}  // namespace attnscope
