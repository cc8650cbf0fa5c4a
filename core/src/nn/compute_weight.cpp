// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/compute_weight.h"

#include <vector>

#include "nn/widened_weights.h"

namespace attnscope {

torch::Tensor widenWeight(const torch::Tensor& w) {
  if (WidenedWeights* cache = WidenedWeights::active())
    return cache->widen(w, WidenedWeights::activeBudget());
  return w.to(torch::kFloat);
}

torch::Tensor linearForward(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
  const torch::Tensor w = computeWeight(weight), b = computeWeight(bias);
  const int64_t in = x.dim() > 0 ? x.size(-1) : 0;
  const int64_t rows = in > 0 ? x.numel() / in : 0;
  if (rows < 1 || rows > 2 || w.dim() != 2 || !x.device().is_cpu() ||
      x.scalar_type() != torch::kFloat || w.scalar_type() != torch::kFloat ||
      (b.defined() && b.scalar_type() != torch::kFloat)) {
    return torch::nn::functional::linear(x, w, b);
  }
  const torch::Tensor flat = x.reshape({rows, in});
  std::vector<torch::Tensor> out;
  for (int64_t r = 0; r < rows; ++r)
    out.push_back(b.defined() ? torch::addmv(b, w, flat[r]) : torch::mv(w, flat[r]));
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = w.size(0);
  return torch::stack(out).view(shape);
}

}  // namespace attnscope
