// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <utility>

#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// Llama's gated feed-forward block, mlp.{gate,up,down}_proj (Llama, Mistral, Qwen, Gemma's GeGLU):
/// down(act(gate(x)) · up(x)), traced by feedForward. The family's layer registers the modules.
struct GatedMlp {
  Linear gate{nullptr}, up{nullptr}, down{nullptr};

  /// x: [B, T, C] -> [B, T, C], taken by value as feedForward takes it (move it in);
  /// *outStep receives the trace index of the result.
  torch::Tensor forward(torch::Tensor x, Activation act, TraceRecorder& rec, int inStep,
                        int* outStep) {
    const MlpProjection g{[&](const torch::Tensor& t) { return gate(t); }, "self.gate_proj(x)"};
    const MlpProjection u{[&](const torch::Tensor& t) { return up(t); }, "self.up_proj(x)"};
    const MlpProjection d{[&](const torch::Tensor& t) { return down(t); }, "self.down_proj(h)"};
    return feedForward(std::move(x), u, act, d, &g, rec, inStep, outStep);
  }
};

}  // namespace attnscope
