// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "nn/compute_weight.h"
#include "nn/packed_weights.h"

namespace attnscope {

/// GPT-2's "Conv1D", a linear layer stored transposed: y = x @ weight + bias.
/// Parameters: weight [in, out], bias [out] (left uninitialised: they are always loaded).
class Conv1DImpl : public torch::nn::Module {
 public:
  Conv1DImpl(int64_t in, int64_t out)
      : weight(register_parameter("weight", torch::empty({in, out}), /*requires_grad=*/false)),
        bias(register_parameter("bias", torch::empty({out}), /*requires_grad=*/false)) {}

  /// x: [..., in] -> [..., out]
  torch::Tensor forward(const torch::Tensor& x) {
    // A GGUF file's matrix, kept packed as it stores it: [out, in] rows, x @ rowsᵀ.
    if (packedLayout(weight)) return linearForward(x, weight, bias);
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = weight.size(1);
    return torch::addmm(computeWeight(bias), x.reshape({-1, x.size(-1)}), computeWeight(weight))
        .view(shape);
  }

  torch::Tensor weight;
  torch::Tensor bias;
};
TORCH_MODULE(Conv1D);

}  // namespace attnscope
