// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "attnscope/shape_trace.h"

// Helpers shared by the nn/ unit tests. Inputs are drawn with std::mt19937 and written through
// data_ptr, results read back the same way, so the reference side of every test is plain C++ in
// double precision.
namespace attnscope::test {

/// A contiguous float32 tensor of N(0, 1) · scale values from a fixed seed.
inline torch::Tensor randomTensor(const std::vector<int64_t>& shape, uint32_t seed,
                                  double scale = 1.0) {
  torch::Tensor t = torch::empty(shape, torch::kFloat);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(normal(rng) * scale);
  return t;
}

/// Every element of a float tensor (any layout) as doubles, in row-major order.
inline std::vector<double> toDoubles(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kFloat).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<double>(p, p + c.numel());
}

inline std::vector<int64_t> shapeOf(const torch::Tensor& t) {
  return {t.sizes().begin(), t.sizes().end()};
}

/// Compares got (float) with want element by element; reports the number of mismatches and the
/// first few. -inf must match -inf exactly.
///
/// `tol` is absolute for |want| <= 1 and relative above: |got - want| <= tol · max(1, |want|).
/// Why: float32 rounding grows with the magnitude, and OpenBLAS's kernel sets (Prescott, Haswell,
/// SkylakeX, Cooperlake) round products differently. An absolute 1e-5 on a value near 40, where
/// one float32 ulp is 4e-6, failed on an Intel Xeon with OpenBLAS's Prescott kernels.
inline void expectAllNear(const torch::Tensor& got, const std::vector<double>& want, double tol,
                          const std::string& what) {
  const std::vector<double> g = toDoubles(got);
  ASSERT_EQ(g.size(), want.size()) << what << ": element count";
  int bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool same = (std::isinf(want[i]) || std::isinf(g[i]))
                          ? g[i] == want[i]
                          : std::abs(g[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]));
    if (!same) {
      if (bad < 5) first << "  [" << i << "] got " << g[i] << " want " << want[i] << "\n";
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << g.size() << " elements differ by more than "
                    << tol << " x max(1, |want|)\n"
                    << first.str();
}

/// The names of the recorded steps, in order.
inline std::vector<std::string> stepNames(const LayerTrace& trace) {
  std::vector<std::string> out;
  for (const TraceStep& s : trace.steps) out.push_back(s.name);
  return out;
}

}  // namespace attnscope::test
