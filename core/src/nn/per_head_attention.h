// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "nn/attention_output.h"
#include "nn/head.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// The textbook's multi-head attention: H independent Head modules whose outputs are
/// concatenated on the channel axis, then projected.
/// Parameters: heads.{h}.{key,query,value}.weight [hs, in], proj.{weight,bias} [d_model, d_model].
class PerHeadAttentionImpl : public torch::nn::Module {
 public:
  PerHeadAttentionImpl(int inputDim, int dModel, int heads);
  AttentionOutput forward(const AttentionInput& in, TraceRecorder& rec);

  torch::nn::ModuleList heads{nullptr};
  torch::nn::Linear proj{nullptr};

 private:
  AttentionOutput forwardBatched(const AttentionInput& in);
  int m_dModel, m_heads;
};
TORCH_MODULE(PerHeadAttention);

}  // namespace attnscope
