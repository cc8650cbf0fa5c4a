// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>

#include "nn/linear.h"
#include "nn/scaled_dot_product.h"

namespace attnscope {

/// The four projections of an attention block with separate q, k, v and output matrices (T5's
/// {q, k, v, o}, BART's {q,k,v,out}_proj), as the family registered them.
struct AttentionProjections {
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  std::string qName = "q", kName = "k", vName = "v", oName = "o";  // for the trace
};

/// One attention block, every step traced: queries from x, keys and values from `memory` (x
/// itself for self-attention, the encoder's output for cross-attention), heads split, scaled
/// dot-product with the options' scale, bias, mask and buffers, heads merged, output projection.
/// `prefix` names the steps ("cross_q", ...; empty for self-attention). x: [B, Tq, C], memory:
/// [B, Tk, C] -> [B, Tq, C]; *outStep receives the trace index of the result.
torch::Tensor projectedAttention(const AttentionProjections& p, const torch::Tensor& x, int xStep,
                                 const torch::Tensor& memory, int memoryStep, int64_t heads,
                                 const SdpaOptions& sdpa, TraceRecorder& rec,
                                 const std::string& prefix, int* outStep);

}  // namespace attnscope
