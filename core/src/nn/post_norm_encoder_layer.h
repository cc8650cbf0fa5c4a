// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>

#include "nn/activation.h"
#include "nn/attention_output.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// The pieces of a post-norm encoder layer (BERT, RoBERTa, ELECTRA, DistilBERT, ALBERT), as a
/// family's modules hold them under their checkpoint names.
struct PostNormEncoderParts {
  using Fn = std::function<torch::Tensor(const torch::Tensor&)>;
  Fn query, key, value;  // [B, T, C] -> [B, T, C]
  Fn attentionOutput;    // the projection after the heads
  Fn attentionNorm;      // LayerNorm after the first residual
  Fn up, down;           // the feed-forward block's two projections
  Fn outputNorm;         // LayerNorm after the second residual
  /// The modules' Python names, for the trace: {"query", "key", "value", "attention.output.dense",
  /// "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"}.
  std::vector<std::string> names;
};

/// The parts from a family's eight modules (Linear / LayerNorm holders), in the order of `names`.
template <class Proj, class Norm>
PostNormEncoderParts postNormParts(Proj q, Proj k, Proj v, Proj o, Norm attentionNorm, Proj up,
                                   Proj down, Norm outputNorm, std::vector<std::string> names) {
  const auto call = [](auto module) {
    return [module](const torch::Tensor& x) mutable { return module->forward(x); };
  };
  return {call(q),  call(k),    call(v),          call(o),         call(attentionNorm),
          call(up), call(down), call(outputNorm), std::move(names)};
}

/// x = LayerNorm(x + Wo·attention(x)); x = LayerNorm(x + down(act(up(x)))): BERT's layer, with
/// bidirectional scaled dot-product attention over separate q/k/v projections.
/// x: [B, T, C]; mask: [B, 1, T, T] additive (padding) or undefined; buffers receive the
/// [B, H, T, T] attention. Returns [B, T, C]; every step is recorded.
torch::Tensor postNormEncoderLayer(const torch::Tensor& x, const PostNormEncoderParts& parts,
                                   int64_t heads, Activation act, const torch::Tensor& mask,
                                   const AttentionBuffers& buffers, TraceRecorder& rec);

}  // namespace attnscope
