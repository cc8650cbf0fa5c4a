// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

namespace attnscope {

/// One head of the chapter's attention: key, query and value projections without bias.
/// Parameters: key/query/value.weight [head_size, in].
class HeadImpl : public torch::nn::Module {
 public:
  HeadImpl(int inputDim, int headSize);
  torch::nn::Linear key{nullptr}, query{nullptr}, value{nullptr};
};
TORCH_MODULE(Head);

}  // namespace attnscope
