// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <vector>

#include "attnscope/safetensors.h"

namespace attnscope {

/// PyTorch's default init for Linear (kaiming-uniform weights, uniform(±1/√fan_in) biases),
/// LayerNorm (1, 0) and Embedding (N(0,1)), drawn from the given generator so that a seed fully
/// determines the weights and the global generator is never touched.
void initialiseLikePyTorch(torch::nn::Module& module, at::Generator gen);

/// named_parameters() (and buffers) as float32 CPU tensors, in registration order.
std::vector<NamedTensor> stateDict(const torch::nn::Module& module);

/// Copies weights into the module. Every parameter must be present with its exact shape, and
/// no unknown name may be given; throws Error(Format) naming the first problem.
void loadStateDict(torch::nn::Module& module, const std::vector<NamedTensor>& weights,
                   const std::vector<std::string>& ignoredNames = {});

uint64_t parameterBytes(const torch::nn::Module& module);

}  // namespace attnscope
