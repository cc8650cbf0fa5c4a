// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

namespace attnscope {

/// Root-mean-square norm of Llama, Mistral, Qwen and T5: x · rsqrt(mean(x²) + eps) · weight,
/// with no mean subtraction and no bias, computed in float32 as Hugging Face does. With
/// `unitOffset` the gain is (1 + weight), Gemma's (its weights are stored as offsets from 1).
/// Parameters: weight [dim].
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t dim, double eps, bool unitOffset = false);
  /// x: [..., dim] -> [..., dim]
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;

 private:
  double m_eps;
  bool m_unitOffset;
};
TORCH_MODULE(RmsNorm);

}  // namespace attnscope
