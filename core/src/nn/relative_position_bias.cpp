// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/relative_position_bias.h"

#include <cmath>

#include "nn/compute_weight.h"

namespace attnscope {

torch::Tensor relativePositionBucket(const torch::Tensor& relative, bool bidirectional,
                                     int64_t buckets, int64_t maxDistance) {
  torch::Tensor bucket = torch::zeros_like(relative);
  torch::Tensor distance;
  if (bidirectional) {
    buckets /= 2;
    bucket += (relative > 0).to(torch::kLong) * buckets;
    distance = relative.abs();
  } else {
    distance = -torch::min(relative, torch::zeros_like(relative));
  }
  const int64_t maxExact = buckets / 2;
  const torch::Tensor small = distance < maxExact;
  // log(0) for the small distances is discarded by the where below.
  torch::Tensor large =
      maxExact + (torch::log(distance.to(torch::kFloat) / static_cast<double>(maxExact)) /
                  std::log(static_cast<double>(maxDistance) / static_cast<double>(maxExact)) *
                  static_cast<double>(buckets - maxExact))
                     .to(torch::kLong);
  large = torch::min(large, torch::full_like(large, buckets - 1));
  return bucket + torch::where(small, distance, large);
}

RelativePositionBiasImpl::RelativePositionBiasImpl(int64_t buckets, int64_t maxDistance,
                                                   int64_t heads, bool bidirectional)
    : m_buckets(buckets), m_maxDistance(maxDistance), m_bidirectional(bidirectional) {
  relative_attention_bias = register_module(
      "relative_attention_bias",
      torch::nn::Embedding(
          torch::nn::EmbeddingOptions(buckets, heads)._weight(torch::zeros({buckets, heads}))));
}

torch::Tensor RelativePositionBiasImpl::forward(int64_t queries, int64_t keys,
                                                int64_t queryOffset) {
  // On the table's device, so the lookup needs no copy wherever the module was moved.
  const auto options =
      torch::TensorOptions().dtype(torch::kLong).device(relative_attention_bias->weight.device());
  const torch::Tensor context =
      torch::arange(queryOffset, queryOffset + queries, options).unsqueeze(1);
  const torch::Tensor memory = torch::arange(keys, options).unsqueeze(0);
  const torch::Tensor bucket =
      relativePositionBucket(memory - context, m_bidirectional, m_buckets, m_maxDistance);
  const torch::Tensor values =
      torch::embedding(computeWeight(relative_attention_bias->weight), bucket);  // [Tq, Tk, H]
  return values.permute({2, 0, 1}).unsqueeze(0);
}

}  // namespace attnscope
