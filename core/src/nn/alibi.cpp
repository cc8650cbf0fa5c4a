// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/alibi.h"

#include <cmath>

namespace attnscope {

torch::Tensor alibiSlopes(int64_t heads) {
  const int64_t closest = int64_t{1}
                          << static_cast<int>(std::floor(std::log2(static_cast<double>(heads))));
  const auto slopesFor = [](int64_t n, int64_t first, int64_t step, int64_t count) {
    const double base = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3)));
    const torch::Tensor powers = torch::arange(first, first + step * count, step, torch::kInt);
    return torch::pow(torch::scalar_tensor(base, torch::kFloat), powers);
  };
  torch::Tensor slopes = slopesFor(closest, 1, 1, closest);
  if (closest != heads) {
    const int64_t remaining = std::min(closest, heads - closest);
    slopes = torch::cat({slopes, slopesFor(2 * closest, 1, 2, remaining)});
  }
  return slopes;
}

torch::Tensor alibiBias(const torch::Tensor& slopes, const std::vector<int>& keyLengths,
                        int64_t keys) {
  const int64_t B = static_cast<int64_t>(keyLengths.size());
  torch::Tensor positions = torch::arange(keys, torch::kFloat).repeat({B, 1});  // [B, Tk]
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = keyLengths[static_cast<std::size_t>(b)];
    if (len < keys) positions[b].narrow(0, len, keys - len).zero_();
  }
  return slopes.view({1, -1, 1, 1}) * positions.view({B, 1, 1, keys});
}

}  // namespace attnscope
