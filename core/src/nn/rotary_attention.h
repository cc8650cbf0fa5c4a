// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>

#include "nn/attention_tail.h"
#include "nn/linear.h"
#include "nn/qkv_layout.h"
#include "nn/rms_norm.h"
#include "nn/rotary_cache.h"
#include "nn/scaled_dot_product.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// The modules of a Llama-style attention block (Llama, Mistral, Qwen, Gemma 2/3, OLMo 2, the
/// mixtures of experts): separate q/k/v/o projections (self_attn.{q,k,v,o}_proj), optional q/k
/// norms, and its head counts. The family's layer registers them under its checkpoint's names.
struct RotaryAttention {
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  RmsNorm qNorm{nullptr}, kNorm{nullptr};  // before the rotation; empty: none
  bool wholeNorms = false;  // false: the norms span head_dim, each head alone (Qwen3, Gemma 3);
                            // true: the whole projection, H·hd and Hkv·hd, before the split into
                            // heads (OLMo 2, OLMoE)
  int64_t heads = 0, kvHeads = 0;  // H query heads, Hkv key/value heads (Hkv divides H)
};

/// What such a block does between the input norm and the scores, every step traced in Hugging
/// Face's order: q, k and v projected from x (q and k normalised here when m.wholeNorms) and split
/// into heads, q and k normalised per head (when m has norms and not wholeNorms), rotated by
/// `rotary` at `positions`, and grouped keys and values repeated to one per query head (repeat_kv).
/// One place, so that the families cannot trace it differently.
/// x: [B, T, C] (the normed hidden states, trace step xStep); positions: [T] int64.
/// Returns q, k, v [B, H, T, hd] with their trace steps.
QkvHeads rotaryQkvHeads(const torch::Tensor& x, int xStep, RotaryAttention& m, RotaryCache& rotary,
                        const torch::Tensor& positions, TraceRecorder& rec);

/// The end of rotaryQkvHeads, for a family that projects and splits q, k and v itself (Phi-3's
/// fused qkv_proj): q and k rotated by cos/sin ([T, rotaryDim], the rotation's own description in
/// `rope` for the trace), then keys and values repeated to `heads`. r: q [B, H, T, hd], k and v
/// [B, Hkv, T, hd] -> each [B, H, T, hd].
QkvHeads rotateAndRepeat(QkvHeads r, int64_t heads, const torch::Tensor& cos,
                         const torch::Tensor& sin, const std::string& rope, TraceRecorder& rec);

/// The whole block: rotaryQkvHeads, then attentionTail with the family's scores (sdpa: mask,
/// scale, soft-cap, buffers) and o_proj; valueNorms: undefined, or [B, H, T] to receive each
/// head's value norms. x: [B, T, C] -> [B, T, C]; *outStep receives its trace index.
torch::Tensor rotaryAttention(const torch::Tensor& x, int xStep, RotaryAttention& m,
                              RotaryCache& rotary, const torch::Tensor& positions,
                              const SdpaOptions& sdpa, const torch::Tensor& valueNorms,
                              TraceRecorder& rec, int* outStep);

}  // namespace attnscope
