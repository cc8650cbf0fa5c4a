// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/head_value_norms.h"

#include "nn/packed_weights.h"

namespace attnscope {

torch::Tensor headValueNorms(const torch::Tensor& values, const torch::Tensor& outputWeight) {
  // [B, H, T, hd] x [H, hd, C] -> [B, H, T, C], then the Euclidean norm over C.
  const torch::Tensor transformed =
      torch::einsum("bhtd,hdc->bhtc", {values.to(torch::kFloat), outputWeight.to(torch::kFloat)});
  return torch::linalg_vector_norm(transformed, 2, {-1}, false, c10::nullopt);
}

torch::Tensor outputWeightByHead(const torch::Tensor& linearWeight, int64_t heads) {
  const torch::Tensor w = floatWeight(linearWeight);  // packed (GGUF) weights too
  return w.t().reshape({heads, -1, w.size(0)});
}

}  // namespace attnscope
