// SPDX-License-Identifier: GPL-3.0-or-later
// Scaled dot-product attention written as plain loops in double precision: what both of
// scaledDotProduct's kernels are checked against.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

namespace attnscope::test {

struct Reference {
  std::vector<double> scores, attention, values;  // [B, H, Tq, Tk], [B, H, Tq, Tk], [B, H, Tq, hd]
};

/// softmax(cap(q·kᵀ·scale) + bias + mask)·v with loops. q [B, H, Tq, hd], k/v [B, H, Tk, hd],
/// bias [1, H, Tq, Tk] or undefined, mask [B, 1, Tq, Tk] or undefined; softcap > 0:
/// cap(s) = softcap·tanh(s / softcap), else the identity.
inline Reference referenceSdpa(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double scale, const torch::Tensor& bias,
                               const torch::Tensor& mask, double softcap = 0.0) {
  const auto qa = q.accessor<float, 4>(), ka = k.accessor<float, 4>(), va = v.accessor<float, 4>();
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Tk = k.size(2), hd = q.size(3);
  Reference r;
  r.scores.assign(static_cast<std::size_t>(B * H * Tq * Tk), 0.0);
  r.attention = r.scores;
  r.values.assign(static_cast<std::size_t>(B * H * Tq * hd), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < Tq; ++i) {
        const std::size_t row = static_cast<std::size_t>(((b * H + h) * Tq + i) * Tk);
        double top = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Tk; ++j) {
          double s = 0;
          for (int64_t d = 0; d < hd; ++d) s += double(qa[b][h][i][d]) * double(ka[b][h][j][d]);
          s *= scale;
          if (softcap > 0) s = softcap * std::tanh(s / softcap);
          if (bias.defined()) s += bias.accessor<float, 4>()[0][h][i][j];
          if (mask.defined()) s += mask.accessor<float, 4>()[b][0][i][j];
          r.scores[row + j] = s;
          top = std::max(top, s);
        }
        double sum = 0;
        for (int64_t j = 0; j < Tk; ++j)
          sum += r.attention[row + j] = std::exp(r.scores[row + j] - top);
        for (int64_t j = 0; j < Tk; ++j) r.attention[row + j] /= sum;
        for (int64_t d = 0; d < hd; ++d) {
          double o = 0;
          for (int64_t j = 0; j < Tk; ++j) o += r.attention[row + j] * va[b][h][j][d];
          r.values[static_cast<std::size_t>(((b * H + h) * Tq + i) * hd + d)] = o;
        }
      }
    }
  }
  return r;
}

/// [B, 1, Tq, Tk]: -inf where key j > query i (causal) or j >= keyLengths[b], else 0.
inline torch::Tensor loopMask(int64_t B, int64_t Tq, int64_t Tk, bool causal,
                              const std::vector<int>& keyLengths) {
  torch::Tensor m = torch::zeros({B, 1, Tq, Tk});
  auto a = m.accessor<float, 4>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j)
        if ((causal && j > i) || j >= keyLengths[static_cast<std::size_t>(b)])
          a[b][0][i][j] = -std::numeric_limits<float>::infinity();
  return m;
}

}  // namespace attnscope::test
