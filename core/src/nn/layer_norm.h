// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "nn/compute_weight.h"

namespace attnscope {

/// LayerNorm over the last axis, torch::nn::LayerNorm's formula, whose gain and bias may stay in
/// a checkpoint's compact dtype. Parameters: weight [dim], bias [dim] (loaded, not initialised).
/// affine false: no gain and no bias (nn.LayerNorm(elementwise_affine=False), OPT's option);
/// hasBias false: a gain only (nn.LayerNorm(bias=False), ModernBERT's norm_bias false).
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t dim, double eps, bool affine = true, bool hasBias = true)
      : m_dim(dim), m_eps(eps) {
    if (!affine) return;
    weight = register_parameter("weight", torch::ones({dim}), /*requires_grad=*/false);
    if (hasBias) bias = register_parameter("bias", torch::zeros({dim}), /*requires_grad=*/false);
  }

  /// x: [..., dim] -> [..., dim]
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::layer_norm(x, {m_dim}, computeWeight(weight), computeWeight(bias), m_eps);
  }

  torch::Tensor weight;
  torch::Tensor bias;

 private:
  int64_t m_dim;
  double m_eps;
};
TORCH_MODULE(LayerNorm);

}  // namespace attnscope
