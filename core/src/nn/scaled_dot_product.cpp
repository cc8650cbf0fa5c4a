// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/scaled_dot_product.h"

namespace attnscope {

ScaledDotProduct scaledDotProduct(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, const SdpaOptions& o, TraceRecorder& rec,
                                  int qStep, int kStep, int vStep) {
  ScaledDotProduct r;
  // Handles, not copies: the caller copies them into the result once the layer is done.
  if (o.buffers.queryKey) *o.buffers.queryKey = {q.detach(), k.detach(), o.scale};
  const int head = o.head;
  const bool perHead = head >= 0;
  torch::Tensor scoresOut = o.buffers.scores,
                attentionOut = o.buffers.attention;  // handles, not data
  torch::Tensor raw = scoresOut.defined() ? torch::matmul_out(scoresOut, q, k.transpose(-2, -1))
                                          : torch::matmul(q, k.transpose(-2, -1));
  int s = rec.record(perHead ? "wei" : "scores", "q @ k.transpose(-2, -1)", "matmul", raw,
                     {qStep, kStep}, head);
  // In place: raw is ours, and a T x T temporary per step would triple the peak at long inputs.
  torch::Tensor scaled = raw;
  if (o.scale != 1.0 || !o.scaleText.empty()) {
    scaled.mul_(o.scale);
    s = rec.record("scaled", (perHead ? "wei * " : "scores * ") + o.scaleText, "scale", scaled, {s},
                   head);
  }
  if (o.bias.defined()) {
    scaled.add_(o.bias);
    s = rec.record("biased",
                   "scores + " + (o.biasText.empty() ? std::string("position_bias") : o.biasText),
                   "position_bias", scaled, {s}, head);
  }
  if (o.mask.defined()) {
    scaled.add_(o.mask);
    s = rec.record("masked",
                   perHead ? "wei.masked_fill(tril == 0, float('-inf'))" : "scaled + mask", "mask",
                   scaled, {s}, head);
  }
  r.scores = scaled;
  r.attention = attentionOut.defined() ? torch::softmax_out(attentionOut, scaled, -1)
                                       : torch::softmax(scaled, -1);
  s = rec.record("attention", "F.softmax(scaled, dim=-1)", "softmax", r.attention, {s}, head);
  r.values = torch::matmul(r.attention, v);
  if (const torch::Tensor& keep = o.buffers.headMask; keep.defined()) {
    // Not in place: with a mask that requires grad, autograd needs the unmasked values.
    r.values = perHead ? r.values * keep[head] : r.values * keep.view({-1, 1, 1});
  }
  r.valuesStep = rec.record(perHead ? "out" : "values", perHead ? "wei @ v" : "attention @ v",
                            "matmul", r.values, {s, vStep}, head);
  return r;
}

}  // namespace attnscope
