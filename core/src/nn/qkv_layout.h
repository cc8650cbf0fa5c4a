// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "runtime/trace_recorder.h"

namespace attnscope {

/// Queries, keys and values split into heads, each [B, H, T, hd], with their trace steps.
struct QkvHeads {
  torch::Tensor q, k, v;
  int qStep = -1, kStep = -1, vStep = -1;
};

/// How a fused projection lays out q, k and v on its last axis.
enum class QkvLayout {
  /// [q | k | v], three contiguous blocks of H·hd: GPT-2's c_attn.
  Split,
  /// per head [q_h k_h v_h]: the tutorial's qkv_layer, GPT-NeoX's query_key_value, Bloom's
  /// query_key_value (view(B, T, H, 3, hd) is the same memory as (B, T, H, 3·hd)).
  InterleavedPerHead,
};

/// qkv: [B, T, 3·H·hd] -> q, k, v [B, H, T, hd]. qkvStep is the trace index of qkv.
QkvHeads splitFusedQkv(const torch::Tensor& qkv, QkvLayout layout, int64_t heads,
                       TraceRecorder& rec, int qkvStep);

/// x: [B, T, H·hd] -> [B, H, T, hd]: one projection (separate q, k and v layers) split into heads.
torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads);
/// x: [B, H, T, hd] -> [B, T, H·hd], contiguous: the heads side by side again.
torch::Tensor mergeHeads(const torch::Tensor& x);

/// Grouped-query / multi-query attention: x [B, Hkv, T, hd] -> [B, Hkv·groups, T, hd], each
/// key/value head repeated for the `groups` query heads that share it (Hugging Face's repeat_kv:
/// query head h reads key/value head h / groups).
torch::Tensor repeatKv(const torch::Tensor& x, int64_t groups);

}  // namespace attnscope
