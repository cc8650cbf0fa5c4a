// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <utility>

#include "nn/rotary_embedding.h"

namespace attnscope {

/// A rotary block and its cos/sin for the current run: computed once per run and shared by every
/// layer that rotates with it (each rotates by the same angles).
class RotaryCache final {
 public:
  explicit RotaryCache(RotaryOptions options) : m_rotary(std::move(options)) {}

  const RotaryEmbedding& rotary() const { return m_rotary; }

  /// positions: [T] int64 -> cos and sin, each [T, rotaryDim], recomputed when the positions
  /// tensor (one per run, shared by its layers; generation steps each have their own), the device
  /// or the inference mode changed since the last call.
  const std::pair<torch::Tensor, torch::Tensor>& cosSin(const torch::Tensor& positions) {
    if (!m_cosSin.first.defined() || m_cosSin.first.size(0) != positions.size(0) ||
        !m_positions.is_same(positions) || m_cosSin.first.device() != positions.device() ||
        // Tensors made in inference mode cannot be saved for the backward of an attribution.
        (m_cosSin.first.is_inference() && !c10::InferenceMode::is_enabled())) {
      m_cosSin = m_rotary.cosSin(positions);
      m_positions = positions;
    }
    return m_cosSin;
  }

 private:
  RotaryEmbedding m_rotary;
  std::pair<torch::Tensor, torch::Tensor> m_cosSin;
  torch::Tensor m_positions;  // the positions m_cosSin is for
};

}  // namespace attnscope
