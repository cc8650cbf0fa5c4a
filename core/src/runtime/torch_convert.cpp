// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/torch_convert.h"

#include <cstring>

namespace attnscope {

FloatTensor toFloatTensor(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  FloatTensor out;
  out.shape.assign(c.sizes().begin(), c.sizes().end());
  out.data.resize(static_cast<std::size_t>(c.numel()));
  if (c.numel() > 0)
    std::memcpy(out.data.data(), c.data_ptr<float>(), out.data.size() * sizeof(float));
  return out;
}

torch::Tensor toTorch(const FloatTensor& t) {
  torch::Tensor out = torch::empty(t.shape, torch::kFloat32);
  if (!t.data.empty())
    std::memcpy(out.data_ptr<float>(), t.data.data(), t.data.size() * sizeof(float));
  return out;
}

torch::Device toTorchDevice(const std::string& device) { return torch::Device(device); }

}  // namespace attnscope
