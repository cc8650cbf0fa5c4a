// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <vector>

#include "attnscope/token.h"

namespace attnscope {

/// The toy model's embedding "table": each token id maps to a vector drawn from N(0, 1) by a
/// generator seeded with (seed, id), so the same token always gets the same vector without a
/// table sized for all of Unicode. Returns [B, T, dim]; rows past an item's length are 0.
torch::Tensor embedTokens(const std::vector<std::vector<Token>>& batch, int64_t T, int64_t dim,
                          uint64_t seed);

/// A CPU generator for a seed, so runs never touch torch's global generator (the GUI runs models
/// on a worker thread while training may use another).
at::Generator seededGenerator(uint64_t seed);

}  // namespace attnscope
