// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/rms_norm.h"

#include "nn/compute_weight.h"

namespace attnscope {

RmsNormImpl::RmsNormImpl(int64_t dim, double eps)
    : weight(register_parameter("weight", torch::ones({dim}), /*requires_grad=*/false)),
      m_eps(eps) {}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const torch::Tensor h = x.to(torch::kFloat);
  const torch::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  return computeWeight(weight) * (h * torch::rsqrt(variance + m_eps));
}

}  // namespace attnscope
