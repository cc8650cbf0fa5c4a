// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "attnscope/float_tensor.h"

namespace attnscope {

/// Copies any tensor (any device, any float dtype) into a contiguous CPU float32 FloatTensor.
FloatTensor toFloatTensor(const torch::Tensor& t);
/// A CPU float32 torch tensor that owns a copy of the data.
torch::Tensor toTorch(const FloatTensor& t);
torch::Device toTorchDevice(const std::string& device);  // "cpu", "cuda:0"

}  // namespace attnscope
