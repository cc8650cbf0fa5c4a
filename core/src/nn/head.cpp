// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/head.h"

namespace attnscope {

HeadImpl::HeadImpl(int inputDim, int headSize) {
  const auto noBias = [&](int) { return torch::nn::LinearOptions(inputDim, headSize).bias(false); };
  key = register_module("key", torch::nn::Linear(noBias(0)));
  query = register_module("query", torch::nn::Linear(noBias(0)));
  value = register_module("value", torch::nn::Linear(noBias(0)));
}

}  // namespace attnscope
