// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "nn/activation.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// One named projection of a feed-forward block, as the family's module holds it.
struct MlpProjection {
  std::function<torch::Tensor(const torch::Tensor&)> forward;  // [..., in] -> [..., out]
  std::string expression;                                      // "self.c_fc(x)", for the trace
};

/// The position-wise feed-forward block, every step in the trace ("mlp_fc", "mlp_act", "mlp_out"):
/// plain  down(act(up(x)))            (GPT-2, BERT, GPT-NeoX, Bloom, T5 v1.0);
/// gated  down(act(gate(x)) · up(x))  (Llama's SwiGLU, T5 v1.1's gated GELU) when `gate` is set.
/// x: [B, T, C] -> [B, T, C]; *outStep receives the trace index of the result. actParams: the
/// tensors of a learned activation (PReLU, xIELU; see activationParameters). x is taken by value
/// and dropped after its last product, so that a caller that moves it in frees it there instead
/// of holding it beside the [B, T, 4C] hidden state.
torch::Tensor feedForward(torch::Tensor x, const MlpProjection& up, Activation act,
                          const MlpProjection& down, const MlpProjection* gate, TraceRecorder& rec,
                          int inStep, int* outStep, const std::string& actName = "mlp_act",
                          const std::vector<torch::Tensor>& actParams = {});

}  // namespace attnscope
