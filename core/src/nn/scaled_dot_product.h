// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "nn/attention_output.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// How scaledDotProduct computes: the same numbers either way (within float rounding).
enum class SdpaKernel {
  Auto,       // blocked where it is exact and the inputs are big enough to gain from it
  Reference,  // step by step over whole [..., Tq, Tk] tensors, as the Python modules do
  Blocked,    // blockedAttention whenever it applies (tests force it on small inputs)
};

/// What one scaled dot-product attention computes from, besides q, k and v.
struct SdpaOptions {
  AttentionMask mask;        // additive (0 / -inf), broadcastable to [..., Tq, Tk]; undefined: none
  torch::Tensor bias;        // additive position bias (ALiBi, T5's relative bias), broadcastable to
                             // [..., Tq, Tk], added after the scale; undefined: none
  double scale = 1.0;        // multiplies q·kᵀ (T5: 1, unscaled)
  std::string scaleText;     // how the scale was derived, for the trace: "1 / math.sqrt(hd)"
  double softcap = 0.0;      // > 0: scaled scores become softcap·tanh(scores / softcap) before
                             // the bias and mask (Gemma 2's attn_logit_softcapping); the scores
                             // kept are the capped ones
  std::string biasText;      // the bias's expression, for the trace: "alibi"
  std::string maskText;      // the mask's expression, for the trace: "scaled + mask (sliding
                             // window 4096)"; empty: "scaled + mask"
  int head = -1;             // the per-head branch of the trace, -1 for all heads at once
  AttentionBuffers buffers;  // where attention (and scores) go; undefined: allocated here. Its
                             // headMask scales the values ([..., H, Tq, hd], or head `head`'s)
  SdpaKernel kernel = SdpaKernel::Auto;
};

struct ScaledDotProduct {
  torch::Tensor values;     // [..., Tq, hd]
  torch::Tensor attention;  // [..., Tq, Tk]
  torch::Tensor scores;     // [..., Tq, Tk] scaled, biased and masked, before softmax; undefined
                            // when the buffers say the caller keeps none (scoresUnused)
  int valuesStep = -1;      // trace index of `values`
};

/// softmax(cap(q·kᵀ·scale) + bias + mask)·v, cap the identity unless options.softcap. LibTorch 1.13
/// has no public scaled_dot_product_attention. Every step appears in the trace (by shape) whichever
/// kernel runs: the reference one writes the steps out over whole tensors, the blocked one
/// (nn/blocked_attention.h) fuses them per block of query rows and skips the key blocks a causal or
/// windowed mask hides. q: [..., Tq, hd], k and v: [..., Tk, hd]. qStep/kStep/vStep are the trace
/// indices the new steps hang from. Scale, bias and mask are applied in place, so one [..., Tq, Tk]
/// temporary at most is allocated besides the buffers.
ScaledDotProduct scaledDotProduct(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, const SdpaOptions& options,
                                  TraceRecorder& rec, int qStep, int kStep, int vStep);

}  // namespace attnscope
