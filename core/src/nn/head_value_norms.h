// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

namespace attnscope {

/// The norm of what each key would add to the output through each head (Kobayashi et al., 2020):
/// ‖f_h(x_k)‖ with f_h(x) = (x W_V^h + b_V^h) W_O^h, the head's slice of the output projection
/// without its bias (the bias does not depend on the key).
/// values: [B, H, T, hd], each head's x W_V^h + b_V^h; outputWeight: [H, hd, C], the rows of W_O
/// (as in y = z W_O) that read head h. Returns [B, H, T].
torch::Tensor headValueNorms(const torch::Tensor& values, const torch::Tensor& outputWeight);

/// A Linear output projection's weight [C, H·hd] (y = z Wᵀ) as headValueNorms wants it:
/// [H, hd, C], head h's rows of W_O = Wᵀ, widened to float32.
torch::Tensor outputWeightByHead(const torch::Tensor& linearWeight, int64_t heads);

}  // namespace attnscope
