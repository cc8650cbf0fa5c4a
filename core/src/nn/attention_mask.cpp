// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_mask.h"

#include <algorithm>
#include <limits>

namespace attnscope {

torch::Tensor buildMask(const MaskOptions& o) {
  const int64_t B = static_cast<int64_t>(o.keyLengths.size()), Tq = o.queries, Tk = o.keys;
  bool padded = false;
  for (int len : o.keyLengths) padded |= len < Tk;
  const bool windowed = o.slidingWindow > 0 && o.slidingWindow < Tk;
  const bool banded = o.windowRadius >= 0 && o.windowRadius < std::max(Tq, Tk) - 1;
  // One new query after cached keys (generation) sees every key: no mask to build each step.
  const bool hidesKeys = o.causal && !(o.queryOffset > 0 && Tq == 1 && o.queryOffset + 1 >= Tk);
  if (!hidesKeys && !padded && !windowed && !banded) return {};
  torch::Tensor keep = torch::ones({B, 1, Tq, Tk}, torch::kBool);
  const int64_t d = o.queryOffset;
  if (o.causal) keep = keep & torch::ones({Tq, Tk}, torch::kBool).tril(d);
  if (windowed) keep = keep & torch::ones({Tq, Tk}, torch::kBool).triu(d - (o.slidingWindow - 1));
  if (banded) {
    const torch::Tensor ones = torch::ones({Tq, Tk}, torch::kBool);
    keep = keep & ones.triu(d - o.windowRadius) & ones.tril(d + o.windowRadius);
  }
  for (int64_t b = 0; b < B; ++b) {
    if (o.keyLengths[static_cast<std::size_t>(b)] < Tk) {
      keep.index_put_({b, torch::indexing::Slice(), torch::indexing::Slice(),
                       torch::indexing::Slice(o.keyLengths[static_cast<std::size_t>(b)],
                                              torch::indexing::None)},
                      false);
    }
  }
  keep.select(3, 0).logical_or_(keep.any(3).logical_not());
  // In place: one [B, 1, Tq, Tk] float block, not two (4 MB each for GPT-2 at T = 1000).
  return torch::zeros({B, 1, Tq, Tk})
      .masked_fill_(keep.logical_not(), -std::numeric_limits<float>::infinity());
}

torch::Tensor causalMask(int64_t T) {
  MaskOptions o;
  o.keyLengths = {static_cast<int>(T)};
  o.queries = o.keys = T;
  o.causal = true;
  return buildMask(o);
}

}  // namespace attnscope
