// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <vector>

namespace attnscope {

/// ALiBi's per-head slopes (Press et al., 2022, as Bloom computes them): for a power of two H,
/// 2^(-8h/H) for h = 1..H; otherwise those of the nearest lower power of two followed by every
/// other slope of the next power of two. Returns [H] float32.
torch::Tensor alibiSlopes(int64_t heads);

/// The additive bias [B, H, 1, Tk]: slope_h · j for key j among the item's real keys (Bloom adds
/// slope · key position, which softmax makes the same as slope · (j - i)). Padded keys get 0; the
/// mask removes them.
torch::Tensor alibiBias(const torch::Tensor& slopes, const std::vector<int>& keyLengths,
                        int64_t keys);

}  // namespace attnscope
