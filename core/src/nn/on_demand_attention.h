// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "attnscope/attention_source.h"
#include "nn/attention_output.h"

namespace attnscope {

/// AttentionSource over what scaledDotProduct kept of each layer (KeptQueryKey with its bias,
/// mask and rows' normalisers): a tile is recomputed as the forward computed it,
/// exp(cap(q·kᵀ·scale) + bias + mask − rowLogSumExp), from [rows, hd] × [hd, cols] products, so
/// no call holds more than its tile. CPU float32 only (what the forward kept is moved there).
class OnDemandAttention final : public AttentionSource {
 public:
  /// layers kept × [B, H, Tq, Tk]; kvHeads > 0 and < H: grouped-query attention, whose repeated
  /// keys are kept once per key/value head (query head h reads kv head h / (H / kvHeads)).
  OnDemandAttention(int64_t layers, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
                    int64_t kvHeads = 0);

  /// Takes slot's kept tensors (q [B, H, Tq, hd], k [B, H, Tk, hd], rowLogSumExp [B, H, Tq],
  /// bias and mask broadcastable to [B, H, Tq, Tk]); queryLengths [B]: the rows at and past them
  /// are padding (0). Throws Error(InvalidArgument) when the layer kept no normalisers (its
  /// attention did not go through the shared kernel).
  void setLayer(int64_t slot, const KeptQueryKey& kept, const std::vector<int>& queryLengths);

  /// After the run's last layer: lets go of the run's mask.
  void doneKeeping() { m_lastMask = torch::Tensor(); }

  std::array<int64_t, 5> shape() const override;
  void tile(int slot, int item, int head, int q0, int q1, int k0, int k1,
            float* out) const override;
  uint64_t bytes() const override;

 private:
  struct Layer {
    // mask: only when it is not one run of visible keys per row (every mask buildMask makes is,
    // and is kept as its runs: O(T) where the mask tensor is O(T²))
    torch::Tensor q, k, bias, mask, rowLogSumExp;
    int64_t headsPerKey = 1;  // query heads that share each kept key head (k: [B, H / it, Tk, hd])
    std::shared_ptr<const AttentionMask::Ranges> ranges;
    double scale = 1.0, softcap = 0.0;
  };
  /// The runs of a mask tensor, or null when it is not made of one visible run per row.
  std::shared_ptr<const AttentionMask::Ranges> rangesOf(const torch::Tensor& mask);
  std::array<int64_t, 5> m_shape;
  int64_t m_kvHeads = 0;
  std::vector<int> m_queryLengths;
  std::vector<Layer> m_layers;
  // The last mask compressed: the layers of a run usually share one mask tensor. Held, so that its
  // address cannot be reused by another mask, until the run is done (doneKeeping).
  torch::Tensor m_lastMask;
  std::shared_ptr<const AttentionMask::Ranges> m_lastRanges;
};

}  // namespace attnscope
