// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "nn/attention_output.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// The tutorial's multi-head attention: one fused qkv Linear whose output is reshaped to
/// (B, T, H, 3·hd), permuted to (B, H, T, 3·hd) and chunked, so q, k and v interleave per head.
/// Parameters: qkv_layer.{weight,bias} [3·d_model, in], linear_layer.{weight,bias} [d_model,
/// d_model].
class FusedAttentionImpl : public torch::nn::Module {
 public:
  FusedAttentionImpl(int inputDim, int dModel, int heads);
  AttentionOutput forward(const AttentionInput& in, TraceRecorder& rec);

  torch::nn::Linear qkv_layer{nullptr};
  torch::nn::Linear linear_layer{nullptr};

 private:
  int m_dModel, m_heads;
};
TORCH_MODULE(FusedAttention);

}  // namespace attnscope
