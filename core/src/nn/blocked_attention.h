// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <optional>

#include "nn/attention_mask.h"

namespace attnscope {

/// What blockedAttention computes: the same tensors as the step-by-step scaledDotProduct.
struct BlockedAttention {
  torch::Tensor attention;  // [..., Tq, Tk], rows sum to 1, exactly 0 where masked; undefined
                            // when only the rows' normalisers were asked for (rowLogSumExpOut)
  torch::Tensor scores;  // [..., Tq, Tk] scaled, biased and masked (-inf); undefined unless asked
  torch::Tensor values;  // [..., Tq, hdv], contiguous
};

/// softmax(cap(q·kᵀ·scale) + bias + mask)·v, one block of query rows at a time, so that the scores
/// of a block stay in cache from q·kᵀ through the scale, bias, mask and softmax to weights·v: no
/// [..., Tq, Tk] temporary, one write of the attention (straight into `attentionOut`) and no
/// full passes over memory between the steps.
///
/// Blocks of keys that the mask hides from every query of a row block (-inf: after the query in
/// a causal mask, outside a sliding window, padding) are not multiplied at all; their weights are
/// written as the 0 softmax gives them. So a causal model does half the q·kᵀ and weights·v work.
///
/// q: [..., Tq, hd], k: [..., Tk, hd], v: [..., Tk, hdv] with the same leading axes (no
/// broadcasting; any strides). mask and bias (either undefined): additive, broadcastable to
/// [..., Tq, Tk]; a mask of runs (buildMask) is read as runs when the leading axes end in
/// [items, heads], so no [Tq, Tk] mask tensor is made. attentionOut / scoresOut: [..., Tq, Tk] with
/// contiguous rows (any leading strides: a head of a [B, H, Tq, Tk] buffer) to write into, or
/// undefined (allocated here; scores are only computed when `wantScores`).
///
/// softcap > 0: cap(s) = softcap·tanh(s / softcap) (Gemma 2), else the identity.
///
/// rowLogSumExpOut: [..., Tq] (contiguous) to receive each row's log Σ_k exp(score_k), the
/// softmax's normaliser: any weight is then exp(score − it), recomputable from q and k alone
/// (attention on demand, RunRequest::attentionOnDemand). With it and no attentionOut, the
/// attention is not written anywhere: a block's weights live only in its scratch, so no
/// [..., Tq, Tk] buffer exists at any point.
///
/// Returns nullopt, having computed nothing, when the call is outside what the kernel does
/// exactly: not CPU float32, inputs that autograd tracks, broadcast leading axes, a mask or bias
/// whose rows are not contiguous, or a query row that the mask hides every key from (whose
/// softmax is NaN). The caller then runs the step-by-step path.
std::optional<BlockedAttention> blockedAttention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale,
    const torch::Tensor& bias, const AttentionMask& mask, const torch::Tensor& attentionOut,
    const torch::Tensor& scoresOut, bool wantScores, double softcap = 0.0,
    const torch::Tensor& rowLogSumExpOut = {});

}  // namespace attnscope
