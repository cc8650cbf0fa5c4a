// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

namespace attnscope {

/// computeWeight's widening: through the thread's WidenedWeights scope where there is one.
torch::Tensor widenWeight(const torch::Tensor& w);

/// A weight as the float32 the layers compute in. F16/BF16 checkpoints keep their parameters in
/// the file's dtype (half the memory of float32). Inside a run whose WidenedWeights::Scope names a
/// cache, the float32 copy is kept across runs while its budget allows (widened_weights.h);
/// otherwise each layer widens a weight only while it uses it, so at most one layer's float copy
/// exists at a time. Float32 weights pass through as they are (no copy).
inline torch::Tensor computeWeight(const torch::Tensor& w) {
  if (!w.defined() || w.scalar_type() == torch::kFloat) return w;
  return widenWeight(w);
}

/// x @ weightᵀ + bias with either kept compact: torch::nn::Linear's formula.
/// x: [..., in], weight: [out, in], bias: [out] or undefined -> [..., out]. A packed weight is
/// taken as the file stores it, [out, in], also when its parameter is the transpose (Conv1D's).
///
/// One or two rows of x (a language-model head's last-position logits, a one-token run) take a
/// matrix-vector product per row: it reads the weight once, where sgemm first copies all of it
/// into its packed layout. One thread, a 32128 × 512 tied head (T5-small), one row: 7.4 -> 2.1 ms;
/// two rows 7.5 -> 4.2 ms, four rows would be slower than sgemm. Differentiable like the rest, so
/// a forward with gradients (attribution) computes the same numbers as one without.
torch::Tensor linearForward(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias);

}  // namespace attnscope
