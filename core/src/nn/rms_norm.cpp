// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/rms_norm.h"

#include "nn/compute_weight.h"

namespace attnscope {

RmsNormImpl::RmsNormImpl(int64_t dim, double eps, bool unitOffset)
    : weight(register_parameter("weight", torch::ones({dim}), /*requires_grad=*/false)),
      m_eps(eps),
      m_unitOffset(unitOffset) {}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const torch::Tensor h = x.to(torch::kFloat);
  const torch::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  const torch::Tensor normed = h * torch::rsqrt(variance + m_eps);
  // Gemma adds 1 in float32, after widening the weight (transformers' GemmaRMSNorm).
  if (m_unitOffset) return normed * (computeWeight(weight) + 1.0);
  return computeWeight(weight) * normed;
}

}  // namespace attnscope
