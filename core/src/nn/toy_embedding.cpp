// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/toy_embedding.h"

#include <ATen/CPUGeneratorImpl.h>

#include <unordered_map>

namespace attnscope {

at::Generator seededGenerator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

torch::Tensor embedTokens(const std::vector<std::vector<Token>>& batch, int64_t T, int64_t dim,
                          uint64_t seed) {
  torch::Tensor x = torch::zeros({static_cast<int64_t>(batch.size()), T, dim});
  std::unordered_map<int64_t, torch::Tensor> cache;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    for (std::size_t t = 0; t < batch[b].size(); ++t) {
      const int64_t id = batch[b][t].id;
      auto it = cache.find(id);
      if (it == cache.end()) {
        // splitmix64 of (seed, id): neighbouring ids get unrelated streams.
        uint64_t z =
            seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(id) + 0x632BE59BD9B4E019ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        at::Generator gen = seededGenerator(z);
        it = cache.emplace(id, torch::randn({dim}, gen)).first;
      }
      x[static_cast<int64_t>(b)][static_cast<int64_t>(t)] = it->second;
    }
  }
  return x;
}

}  // namespace attnscope
