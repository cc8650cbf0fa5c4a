// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/mlp.h"

namespace attnscope {

torch::Tensor feedForward(torch::Tensor x, const MlpProjection& up, Activation act,
                          const MlpProjection& down, const MlpProjection* gate, TraceRecorder& rec,
                          int inStep, int* outStep, const std::string& actName,
                          const std::vector<torch::Tensor>& actParams) {
  torch::Tensor h;
  int s = -1;
  if (gate) {
    torch::Tensor g = gate->forward(x);
    const int gStep = rec.record("mlp_gate", gate->expression, "linear", g, {inStep});
    g = activateInPlace(act, g, actParams);
    const int aStep = rec.record(actName, activationExpression(act), "activation", g, {gStep});
    h = up.forward(x);
    x = torch::Tensor();  // read for the last time: a caller that moved it in frees it here
    const int uStep = rec.record("mlp_up", up.expression, "linear", h, {inStep});
    h = g.mul_(h);
    s = rec.record("mlp_gated", "act(gate) * up", "multiply", h, {aStep, uStep});
  } else {
    h = up.forward(x);
    x = torch::Tensor();
    s = rec.record("mlp_fc", up.expression, "linear", h, {inStep});
    h = activateInPlace(act, h, actParams);
    s = rec.record(actName, activationExpression(act), "activation", h, {s});
  }
  h = down.forward(h);
  *outStep = rec.record("mlp_out", down.expression, "linear", h, {s});
  return h;
}

}  // namespace attnscope
