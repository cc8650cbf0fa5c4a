// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

namespace attnscope {

/// T5's bucket of a relative position (key - query): exact buckets for small distances,
/// logarithmically wider ones up to maxDistance; half of the buckets for each direction when
/// bidirectional (the encoder), only the past when not (the decoder). relative: int64, any shape.
torch::Tensor relativePositionBucket(const torch::Tensor& relative, bool bidirectional,
                                     int64_t buckets, int64_t maxDistance);

/// T5's learned relative position bias, computed by the first layer of a stack and shared by all.
/// Parameters: relative_attention_bias.weight [buckets, H].
class RelativePositionBiasImpl : public torch::nn::Module {
 public:
  RelativePositionBiasImpl(int64_t buckets, int64_t maxDistance, int64_t heads, bool bidirectional);
  /// -> [1, H, Tq, Tk] float32 on the table's device, added to the unscaled scores. The queries
  /// sit at positions queryOffset.. (generation with a key/value cache: after that many cached
  /// keys), the keys at 0..keys-1.
  torch::Tensor forward(int64_t queries, int64_t keys, int64_t queryOffset = 0);

  torch::nn::Embedding relative_attention_bias{nullptr};

 private:
  int64_t m_buckets, m_maxDistance;
  bool m_bidirectional;
};
TORCH_MODULE(RelativePositionBias);

}  // namespace attnscope
