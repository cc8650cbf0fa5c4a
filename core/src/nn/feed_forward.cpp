// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/feed_forward.h"

namespace attnscope {

FeedForwardImpl::FeedForwardImpl(int nEmbd) {
  net = register_module("net", torch::nn::Sequential(torch::nn::Linear(nEmbd, 4 * nEmbd),
                                                     torch::nn::ReLU(),
                                                     torch::nn::Linear(4 * nEmbd, nEmbd)));
}

}  // namespace attnscope
