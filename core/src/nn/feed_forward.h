// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

namespace attnscope {

/// The chapter's position-wise feed-forward layer: Linear(C, 4C), ReLU, Linear(4C, C).
/// Parameters: net.0.{weight,bias}, net.2.{weight,bias}.
class FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(int nEmbd);
  torch::Tensor forward(const torch::Tensor& x) { return net->forward(x); }
  torch::nn::Sequential net{nullptr};
};
TORCH_MODULE(FeedForward);

}  // namespace attnscope
