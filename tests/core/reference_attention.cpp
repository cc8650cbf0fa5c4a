// SPDX-License-Identifier: GPL-3.0-or-later
#include "reference_attention.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnscope::test {
namespace {

const FloatTensor& find(const std::vector<NamedTensor>& w, const std::string& name) {
  for (const auto& t : w) {
    if (t.name == name) return t.tensor;
  }
  throw std::runtime_error("reference: missing " + name);
}

// y[o] = sum_i W[o, rowOffset.., i] x[i] (+ b[o]) for the rows [row0, row0 + n) of W.
template <typename T>
std::vector<double> linear(const FloatTensor& W, const FloatTensor* b, int64_t row0, int64_t n,
                           const T* x) {
  const int64_t in = W.shape[1];
  std::vector<double> y(static_cast<std::size_t>(n));
  for (int64_t o = 0; o < n; ++o) {
    double s = b ? b->data[row0 + o] : 0.0;
    for (int64_t i = 0; i < in; ++i) s += static_cast<double>(W.data[(row0 + o) * in + i]) * x[i];
    y[o] = s;
  }
  return y;
}

}  // namespace

ReferenceResult referenceAttention(const ToyConfig& c, const std::vector<NamedTensor>& w,
                                   const FloatTensor& x, const FloatTensor* context,
                                   const std::vector<int>& keyLengths) {
  const int64_t B = x.shape[0], Tq = x.shape[1], in = x.shape[2];
  const FloatTensor& kvSrc = context ? *context : x;
  const int64_t Tk = kvSrc.shape[1];
  const int H = c.heads, hd = c.dModel / c.heads, D = c.dModel;
  const double scale =
      c.scale == ScaleKind::HeadSize ? 1.0 / std::sqrt(double(hd)) : 1.0 / std::sqrt(double(D));

  ReferenceResult r;
  r.attention.assign(static_cast<std::size_t>(B * H * Tq * Tk), 0.0);
  r.output.assign(static_cast<std::size_t>(B * Tq * D), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    // q[h][t][d], k[h][t][d], v[h][t][d]
    std::vector<std::vector<std::vector<double>>> q(H), k(H), v(H);
    for (int h = 0; h < H; ++h) {
      for (int64_t t = 0; t < Tq; ++t) {
        const float* xt = &x.data[(b * Tq + t) * in];
        if (c.variant == Variant::Fused) {
          // The fused layout interleaves per head: rows [h*3hd, h*3hd+hd) are head h's q.
          q[h].push_back(
              linear(find(w, "qkv_layer.weight"), &find(w, "qkv_layer.bias"), h * 3 * hd, hd, xt));
        } else {
          q[h].push_back(
              linear(find(w, "heads." + std::to_string(h) + ".query.weight"), nullptr, 0, hd, xt));
        }
      }
      for (int64_t t = 0; t < Tk; ++t) {
        const float* xt = &kvSrc.data[(b * Tk + t) * in];
        if (c.variant == Variant::Fused) {
          const FloatTensor& W = find(w, "qkv_layer.weight");
          const FloatTensor& bias = find(w, "qkv_layer.bias");
          k[h].push_back(linear(W, &bias, h * 3 * hd + hd, hd, xt));
          v[h].push_back(linear(W, &bias, h * 3 * hd + 2 * hd, hd, xt));
        } else {
          const std::string p = "heads." + std::to_string(h) + ".";
          k[h].push_back(linear(find(w, p + "key.weight"), nullptr, 0, hd, xt));
          v[h].push_back(linear(find(w, p + "value.weight"), nullptr, 0, hd, xt));
        }
      }
    }
    for (int64_t t = 0; t < Tq; ++t) {
      std::vector<double> concat(static_cast<std::size_t>(D));
      for (int h = 0; h < H; ++h) {
        std::vector<double> s(static_cast<std::size_t>(Tk),
                              -std::numeric_limits<double>::infinity());
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Tk; ++j) {
          const bool masked =
              j >= keyLengths[b] || (c.mask == MaskKind::Causal && !context && j > t);
          if (masked) continue;
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += q[h][t][d] * k[h][j][d];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (int64_t j = 0; j < Tk; ++j) z += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx);
        for (int64_t j = 0; j < Tk; ++j) {
          const double a = std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx) / z;
          r.attention[((b * H + h) * Tq + t) * Tk + j] = a;
          for (int d = 0; d < hd; ++d) concat[h * hd + d] += a * v[h][j][d];
        }
      }
      const bool fused = c.variant == Variant::Fused;
      const std::vector<double> o =
          linear(find(w, fused ? "linear_layer.weight" : "proj.weight"),
                 &find(w, fused ? "linear_layer.bias" : "proj.bias"), 0, D, concat.data());
      for (int d = 0; d < D; ++d) r.output[(b * Tq + t) * D + d] = o[d];
    }
  }
  return r;
}

}  // namespace attnscope::test
