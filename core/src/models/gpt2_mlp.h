// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "nn/conv1d.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

/// GPT-2's feed-forward block: c_fc to 4·C, GELU (tanh approximation, "gelu_new"), c_proj back.
/// Parameters: c_fc.{weight [C, 4C], bias [4C]}, c_proj.{weight [4C, C], bias [C]}.
class Gpt2MlpImpl : public torch::nn::Module {
 public:
  explicit Gpt2MlpImpl(int nEmbd)
      : c_fc(register_module("c_fc", Gpt2Conv1D(nEmbd, 4 * nEmbd))),
        c_proj(register_module("c_proj", Gpt2Conv1D(4 * nEmbd, nEmbd))) {}

  /// x: [B, T, C] -> [B, T, C]
  torch::Tensor forward(const torch::Tensor& x, TraceRecorder& rec, int inStep, int* outStep) {
    torch::Tensor h = c_fc->forward(x);
    int s = rec.record("mlp_fc", "self.c_fc(x)", "linear", h, {inStep});
    h = torch::gelu(h, "tanh");
    s = rec.record("mlp_gelu", "F.gelu(h, approximate='tanh')", "gelu", h, {s});
    h = c_proj->forward(h);
    *outStep = rec.record("mlp_out", "self.c_proj(h)", "linear", h, {s});
    return h;
  }

  Gpt2Conv1D c_fc;
  Gpt2Conv1D c_proj;
};
TORCH_MODULE(Gpt2Mlp);

}  // namespace attnscope
