// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>

#include "nn/attention_mask.h"

namespace attnscope {

class LayerKvCache;  // generation/layer_kv_cache.h

/// What an attention module's forward returns.
struct AttentionOutput {
  torch::Tensor out;        // [B, Tq, d_model]
  torch::Tensor attention;  // [B, H, Tq, Tk], rows sum to 1
  torch::Tensor scores;     // [B, H, Tq, Tk], scaled and masked (-inf) before softmax
};

/// The queries and keys one attention's q·kᵀ read, kept for the Q/K view
/// (RunRequest::keepQueryKey).
struct KeptQueryKey {
  torch::Tensor queries;  // [B, H, Tq, hd] after rotary, as scaledDotProduct saw them
  torch::Tensor keys;     // [B, H, Tk, hd] likewise (grouped-query heads already repeated)
  double scale = 1.0;     // what q·kᵀ was multiplied by
  double softcap = 0.0;   // > 0: the scaled product was then capped, softcap·tanh(s / softcap)
  // Attention on demand (AttentionBuffers::onDemand) also keeps the rest of the score and the
  // softmax's normaliser, so that any weight is exp(cap(q·k·scale) + bias + mask − rowLogSumExp):
  torch::Tensor bias;          // handle of SdpaOptions::bias (broadcastable), or undefined
  AttentionMask mask;          // handle of SdpaOptions::mask (broadcastable), or undefined
  torch::Tensor rowLogSumExp;  // [B, H, Tq] log Σ_k exp(score_qk)
};

/// Where attention is written when the caller owns the memory: a model writes each layer straight
/// into its result (an [L, B, H, T, T] FloatTensor), with no copy afterwards. Each tensor, when
/// defined, must be contiguous with the result's exact shape ([..., Tq, Tk]).
/// They also carry the head mask, because every family hands them unchanged to the attention: a
/// per-run switch the caller sets reaches every family's heads without per-family code.
struct AttentionBuffers {
  torch::Tensor attention;
  torch::Tensor scores;
  KeptQueryKey* queryKey = nullptr;  // when set, scaledDotProduct hands its q and k here
  torch::Tensor headMask;  // [H] float on the device: each head's output (attention @ v) is
                           // multiplied by its entry before the heads are merged and projected
                           // (0 ablates the head; ones that require grad give ∂/∂head output);
                           // undefined: unchanged
  bool scoresUnused = false;  // the caller keeps no scores: they need not be materialised
  // Attention on demand (RunRequest::attentionOnDemand): the weights are not written at all;
  // scaledDotProduct fills *queryKey (which must be set) with all a weight is recomputed from.
  bool onDemand = false;
  // Step-by-step generation: scaledDotProduct appends its keys and values here and attends over
  // every cached position (q: the new positions only). Null: no cache.
  LayerKvCache* kvCache = nullptr;
  // Called once the layer's weights are in `attention`, before the rest of the layer runs (its
  // output projection and MLP are two thirds of a GPT-2 layer): the window shows the first layer
  // that much sooner (RunRequest::preview). Modules that hand the buffers on call it where they
  // finish writing them; may be empty.
  std::function<void()> written;
};

/// The inputs every attention module takes besides its weights.
struct AttentionInput {
  torch::Tensor x;            // [B, Tq, in]
  torch::Tensor context;      // [B, Tk, in] for cross-attention; undefined for self-attention
  AttentionMask mask;         // [B, 1, Tq, Tk] additive (0 or -inf); undefined for none
  double scale = 1.0;         // multiplies q·kᵀ
  std::string scaleText;      // how the scale was derived, for the trace: "hd**-0.5"
  bool keepAttention = true;  // false while training: skip stacking [B, H, Tq, Tk] copies
  AttentionBuffers buffers;   // [B, H, Tq, Tk] each; undefined: the module allocates
  int inputStep = -1;         // trace index of x when the caller recorded it; -1: record it here
};

}  // namespace attnscope
