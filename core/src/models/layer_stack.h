// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "attnscope/run_request.h"
#include "attnscope/shape_trace.h"
#include "models/group_writer.h"
#include "models/transformer_family.h"

namespace attnscope {
class KvCache;  // generation/layer_kv_cache.h
}

namespace attnscope {

/// One layer stack of a run: the encoder (or the only stack) or an encoder-decoder's decoder,
/// with what each of its layers reads (masks, positions, the context) and where it writes
/// (attention groups, traces, progress).
struct LayerStack {
  int64_t layers = 0;
  std::string name;                  // LayerTrace::stack
  AttentionMask mask, crossMask;     // as LayerContext has them
  torch::Tensor positions, context;  // likewise
  const std::vector<int>* queryLengths = nullptr;
  const std::vector<int>* keyLengths = nullptr;
  const std::vector<int>* contextLengths = nullptr;
  GroupWriter* self = nullptr;   // null: the self-attention is not kept (generation steps)
  GroupWriter* cross = nullptr;  // null: no cross-attention, or not kept
  std::vector<LayerTrace>* traces = nullptr;  // null: nothing recorded
  int64_t sequenceLength = 0;                 // LayerContext::sequenceLength
  KvCache* cache = nullptr;  // generation: each layer attends over its cached keys and values too
  KvCache* crossCache = nullptr;  // generation, encoder-decoders: cross-attention's keys and
                                  // values, stored by the first step and reused
  std::vector<MoeRouting>* routing = nullptr;  // mixture of experts: one entry per layer appended
  /// (layer index, hidden states [B, T, C], context) -> [B, T, C]: the family's layer.
  std::function<torch::Tensor(int, const torch::Tensor&, LayerContext&)> layer;
  int progressBase = 0;                    // layers done before this stack (RunRequest::progress)
  int progressTotal = 0;                   // 0: this pass reports no progress (generation steps)
  std::function<void(int64_t)> layerDone;  // after each layer's attention is written; may be empty
  // After each layer, its output hidden states [B, T, C] (the logit lens); may be empty.
  std::function<void(int64_t, const torch::Tensor&)> hiddenDone;
  // As soon as a layer's self-attention weights are final (GroupWriter::finalOnceWritten), before
  // the rest of that layer runs; may be empty.
  std::function<void(int64_t)> attentionWritten;

  /// Runs the layers on x [B, T, C], each writing its attention through the writers and its
  /// trace (named `variant`); polls the request's cancel flag between layers. -> [B, T, C]
  torch::Tensor run(torch::Tensor x, const RunRequest& request, const std::string& variant) const;
};

/// The additive [B, 1, Tq, Tk] mask of a stack on dev (undefined when nothing is masked): padded
/// keys, and with `causal` later keys; slidingWindow > 0: query i sees only keys j > i - window.
AttentionMask deviceMask(const std::vector<int>& keyLengths, int64_t Tq, int64_t Tk, bool causal,
                         int slidingWindow, const torch::Device& dev);
/// The same for Tq queries at positions queryOffset.. (generation with a key/value cache: the new
/// queries after queryOffset cached keys).
AttentionMask deviceMask(const std::vector<int>& keyLengths, int64_t Tq, int64_t Tk, bool causal,
                         int slidingWindow, const torch::Device& dev, int64_t queryOffset);

}  // namespace attnscope
