// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>

#include "nn/qkv_layout.h"
#include "nn/scaled_dot_product.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// An attention block's output projection, as attentionTail calls it.
struct OutputProjection {
  /// merged heads [B, Tq, H·hd] -> [B, Tq, C]
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  /// The family's Python for it, for the trace: "self.o_proj(merged)".
  std::string expression;
  /// Its weight by head, [H, hd, C] (the rows of W_O, as in y = z W_O, that read head h), for
  /// headValueNorms. Called only when a run asks for value norms; unset where the family has none.
  std::function<torch::Tensor()> weightByHead;
};

/// What differs between families in the tail besides the projection: the trace's text and names,
/// and where value norms go.
struct AttentionTail {
  OutputProjection output;
  /// How the family's Python merges the heads, for the trace.
  std::string mergeExpression = "values.transpose(1, 2).reshape(B, T, -1)";
  /// Prefix of the steps' names: "cross_" for cross-attention, empty for self-attention.
  std::string stepPrefix;
  /// Undefined, or [B, H, Tk] to receive each head's value norms (output.weightByHead must be set).
  torch::Tensor valueNorms;
};

/// The end every attention block shares once its queries, keys and values are split into heads:
/// each head's value norms when asked for, softmax(q·kᵀ·scale + bias + mask)·v (scaledDotProduct,
/// with the options' scale, bias, mask and buffers), the heads merged side by side, and the output
/// projection, every step traced. One place, so that a family cannot trace, merge or write value
/// norms differently from the others.
/// heads: q [B, H, Tq, hd], k and v [B, H, Tk, hd] (grouped keys and values already repeated to
/// one per query head) with their trace steps; taken by value so that they are released before
/// the output projection runs (move them in). Returns [B, Tq, C]; *outStep receives its trace
/// index.
torch::Tensor attentionTail(QkvHeads heads, const SdpaOptions& sdpa, const AttentionTail& tail,
                            TraceRecorder& rec, int* outStep);

}  // namespace attnscope
