// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace attnscope {
namespace {

namespace ak = attention_kernels;

std::vector<float> randomFloats(std::size_t n, uint32_t seed, float spread = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> out(n);
  for (float& x : out) x = dist(gen);
  return out;
}

// Every row count a register tile can leave over (12-row q·kᵀ tiles, 6-row weights·v tiles),
// key counts that end inside a panel, and strided operands (a head inside a fused projection).
TEST(AttentionKernels, QueryKeysMatchesDoubleLoops) {
  if (!ak::available()) GTEST_SKIP() << "no AVX-512 on this CPU: callers use ATen";
  for (const int64_t d : {1, 7, 64, 128}) {
    for (const int64_t n : {1, 31, 33, 100}) {
      for (int64_t m = 1; m <= 25; ++m) {
        SCOPED_TRACE("d " + std::to_string(d) + " n " + std::to_string(n) + " m " +
                     std::to_string(m));
        const int64_t qStride = d + 5, kStride = 3 * d;
        const std::vector<float> q = randomFloats(static_cast<std::size_t>(m * qStride), 1),
                                 k = randomFloats(static_cast<std::size_t>(n * kStride), 2);
        std::vector<float> packed(ak::packedKeysSize(n, d), NAN);
        ak::packKeys(k.data(), kStride, n, d, packed.data());
        // Panels [1, end) when there are two or more: the offset into s and packed is checked.
        const int64_t panels = (n + ak::kPanel - 1) / ak::kPanel, p0 = panels > 1 ? 1 : 0;
        const int64_t sStride = (panels - p0) * ak::kPanel + 3;
        std::vector<float> s(static_cast<std::size_t>(m * sStride), NAN);
        ak::queryKeys(q.data(), qStride, m, d, packed.data(), p0, panels, 0.5f, s.data(), sStride);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = p0 * ak::kPanel; j < panels * ak::kPanel; ++j) {
            double want = 0;
            if (j < n)
              for (int64_t c = 0; c < d; ++c)
                want += double(q[i * qStride + c]) * double(k[j * kStride + c]);
            const float got = s[static_cast<std::size_t>(i * sStride + j - p0 * ak::kPanel)];
            ASSERT_NEAR(got, 0.5 * want, 1e-5 * (1 + std::sqrt(double(d)))) << i << "," << j;
          }
          // The padding column past the panels is not written.
          EXPECT_TRUE(std::isnan(s[static_cast<std::size_t>(i * sStride + sStride - 1)]));
        }
      }
    }
  }
}

TEST(AttentionKernels, WeightsValuesMatchesDoubleLoops) {
  if (!ak::available()) GTEST_SKIP() << "no AVX-512 on this CPU: callers use ATen";
  // 300 keys: three key chunks, the last partial; 16–128 columns: every value-register tile.
  for (const int64_t dv : {16, 32, 48, 64, 80, 128}) {
    for (const int64_t n : {1, 127, 300}) {
      for (int64_t m = 1; m <= 13; ++m) {
        SCOPED_TRACE("dv " + std::to_string(dv) + " n " + std::to_string(n) + " m " +
                     std::to_string(m));
        const int64_t pStride = n + 9, vStride = dv + 16, oStride = dv + 2;
        const std::vector<float> p = randomFloats(static_cast<std::size_t>(m * pStride), 3),
                                 v = randomFloats(static_cast<std::size_t>(n * vStride), 4);
        std::vector<float> o(static_cast<std::size_t>(m * oStride), NAN);
        ak::weightsValues(p.data(), pStride, m, n, v.data(), vStride, dv, o.data(), oStride);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t c = 0; c < dv; ++c) {
            double want = 0;
            for (int64_t j = 0; j < n; ++j)
              want += double(p[i * pStride + j]) * double(v[j * vStride + c]);
            ASSERT_NEAR(o[static_cast<std::size_t>(i * oStride + c)], want,
                        2e-6 * (1 + std::sqrt(double(n))))
                << i << "," << c;
          }
          EXPECT_TRUE(std::isnan(o[static_cast<std::size_t>(i * oStride + dv)]));
        }
      }
    }
  }
}

// The softmax against double-precision exp, on rows that are peaked (spread 30: weights down to
// e^-100), hold −inf entries (which must weigh exactly 0), and end inside a register; the copy
// to `out` starts at every alignment.
TEST(AttentionKernels, SoftmaxRowMatchesDoubleAndZeroesMaskedEntries) {
  const float negInf = -std::numeric_limits<float>::infinity();
  for (const int64_t n : {1, 5, 16, 17, 100, 1000}) {
    for (int64_t offset = 0; offset < 16; offset += 3) {
      SCOPED_TRACE("n " + std::to_string(n) + " offset " + std::to_string(offset));
      std::vector<float> x = randomFloats(static_cast<std::size_t>(n), 5, 30.0f);
      for (int64_t j = 1; j < n; j += 3) x[static_cast<std::size_t>(j)] = negInf;
      const std::vector<float> in = x;
      std::vector<float> outBuf(static_cast<std::size_t>(n + 32), NAN);
      float* out = outBuf.data() + offset;
      ak::softmaxRow(x.data(), n, out);
      ak::streamFence();
      double max = -INFINITY, sum = 0;
      for (const float v : in) max = std::max(max, double(v));
      for (const float v : in) sum += std::exp(double(v) - max);
      for (int64_t j = 0; j < n; ++j) {
        const double want = std::exp(double(in[static_cast<std::size_t>(j)]) - max) / sum;
        const float got = x[static_cast<std::size_t>(j)];
        if (std::isinf(in[static_cast<std::size_t>(j)])) {
          ASSERT_EQ(got, 0.0f) << j;
        } else {
          // A few float ulps, plus the rounding of x − max in float (half an ulp of it, which
          // exp turns into a relative error of that size); or the floor subnormals flush to.
          const double gap = max - double(in[static_cast<std::size_t>(j)]);
          ASSERT_NEAR(got, want, want * (4e-7 + gap * 6e-8) + 1e-37) << j;
        }
        ASSERT_EQ(out[j], got) << j;
      }
      EXPECT_TRUE(std::isnan(out[n])) << "nothing written past the row";
      if (offset > 0) {
        EXPECT_TRUE(std::isnan(out[-1])) << "nothing written before the row";
      }
    }
  }
}

TEST(AttentionKernels, AddRowAndStreamFillWriteExactlyTheirRange) {
  const std::vector<float> bias = randomFloats(40, 6), mask = randomFloats(40, 7);
  std::vector<float> x = randomFloats(40, 8);
  const std::vector<float> before = x;
  ak::addRow(x.data() + 1, bias.data(), mask.data(), 37);
  EXPECT_EQ(x[0], before[0]);
  EXPECT_EQ(x[38], before[38]);
  for (std::size_t j = 0; j < 37; ++j) EXPECT_EQ(x[j + 1], (before[j + 1] + bias[j]) + mask[j]);
  ak::addRow(x.data(), nullptr, nullptr, 40);
  EXPECT_EQ(x[5], (before[5] + bias[4]) + mask[4]);

  std::vector<float> row(100, 1.0f);
  for (int64_t from = 0; from < 20; from += 7) {
    ak::streamFill(row.data() + from, 50, -2.0f);
    ak::streamFence();
    for (int64_t j = 0; j < 100; ++j)
      EXPECT_EQ(row[static_cast<std::size_t>(j)], j >= from && j < from + 50 ? -2.0f : 1.0f) << j;
    std::fill(row.begin(), row.end(), 1.0f);
  }
}

}  // namespace
}  // namespace attnscope
