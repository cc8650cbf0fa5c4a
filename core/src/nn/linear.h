// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "nn/compute_weight.h"
#include "nn/packed_weights.h"

namespace attnscope {

/// torch::nn::Linear's formula (x @ weightᵀ + bias) with parameters that may stay in a
/// checkpoint's compact dtype. Parameters: weight [out, in], bias [out] (loaded, not initialised).
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in, int64_t out, bool bias = true)
      : weight(register_parameter("weight", torch::empty({out, in}), /*requires_grad=*/false)) {
    if (bias) this->bias = register_parameter("bias", torch::empty({out}), /*requires_grad=*/false);
  }
  /// x: [..., in] -> [..., out]
  torch::Tensor forward(const torch::Tensor& x) { return linearForward(x, weight, bias); }

  torch::Tensor weight;
  torch::Tensor bias;
};
TORCH_MODULE(Linear);

/// The rows `ids` names (int64, any shape) of an embedding weight as float32 [..., dim]: of a
/// packed weight only those rows are widened.
inline torch::Tensor lookupRows(const torch::Tensor& weight, const torch::Tensor& ids) {
  if (const auto packed = packedLayout(weight)) return unpackEmbedding(weight, *packed, ids);
  return torch::embedding(weight, ids).to(torch::kFloat);
}

/// An embedding table whose rows are widened to float32 when looked up (of a packed table, only
/// the rows looked up are widened).
/// Parameters: weight [rows, dim].
class EmbeddingTableImpl : public torch::nn::Module {
 public:
  EmbeddingTableImpl(int64_t rows, int64_t dim)
      : weight(register_parameter("weight", torch::empty({rows, dim}), /*requires_grad=*/false)) {}
  /// ids: int64 any shape -> [..., dim] float32
  torch::Tensor forward(const torch::Tensor& ids) { return lookupRows(weight, ids); }

  torch::Tensor weight;
};
TORCH_MODULE(EmbeddingTable);

}  // namespace attnscope
