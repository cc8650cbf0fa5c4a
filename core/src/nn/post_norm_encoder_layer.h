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
  /// The output projection's weight [C, C] as stored (y = merged · Wᵀ), for value norms.
  std::function<torch::Tensor()> attentionOutputWeight;
  /// The modules' Python names, for the trace: {"query", "key", "value", "attention.output.dense",
  /// "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"}.
  std::vector<std::string> names;
};

/// Where a family's checkpoint keeps the eight modules of one layer, relative to the layer's
/// prefix: BERT's "attention.self.query", DistilBERT's "attention.q_lin", ALBERT's "ffn".
struct PostNormNames {
  std::string query, key, value, attentionOutput, attentionNorm, up, down, outputNorm;
};

/// Registers one layer's modules on `root` under prefix + names (q, k, v and the output
/// projection C -> C, up C -> inner, down inner -> C, two LayerNorms of width C) and returns the
/// parts that call them, with the names for the trace.
PostNormEncoderParts addPostNormLayer(torch::nn::Module& root, const std::string& prefix,
                                      const PostNormNames& names, int64_t width, int64_t inner,
                                      double eps);

/// x = LayerNorm(x + Wo·attention(x)); x = LayerNorm(x + down(act(up(x)))): BERT's layer, with
/// bidirectional scaled dot-product attention over separate q/k/v projections.
/// x: [B, T, C]; mask: [B, 1, T, T] additive (padding) or undefined; buffers receive the
/// [B, H, T, T] attention; valueNorms, when defined, [B, H, T] receives each head's
/// ‖(x_k W_V^h + b_V^h) W_O^h‖. Returns [B, T, C]; every step is recorded.
torch::Tensor postNormEncoderLayer(const torch::Tensor& x, const PostNormEncoderParts& parts,
                                   int64_t heads, Activation act, const AttentionMask& mask,
                                   const AttentionBuffers& buffers, TraceRecorder& rec,
                                   const torch::Tensor& valueNorms = {});

}  // namespace attnscope
