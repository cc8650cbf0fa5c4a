// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/blas_kernels.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <strings.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <random>

namespace attnscope {
namespace {

bool openBlasInProcess() {
  void* openblas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (openblas) dlclose(openblas);
  return openblas != nullptr;
}

TEST(BlasKernels, FastestSetFollowsTheInstructionsTheCpuHas) {
  BlasKernels::CpuFeatures cpu;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "") << "SSE only: whatever OpenBLAS picks";
  cpu.avx = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Sandybridge");
  cpu.avx2 = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Sandybridge") << "AVX2 kernels need FMA too";
  cpu.fma = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Haswell");
  cpu.amd = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Zen");
  cpu.avx512f = cpu.avx512bw = cpu.avx512dq = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Zen") << "SkylakeX's kernels need AVX-512 VL";
  cpu.avx512vl = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "SkylakeX");
  cpu.avx512bf16 = true;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Cooperlake");
  cpu.amd = false;
  EXPECT_EQ(BlasKernels::fastestFor(cpu), "Cooperlake");
}

TEST(BlasKernels, RanksOrderTheSetsByInstructions) {
  EXPECT_EQ(BlasKernels::rank("Prescott"), 0);
  EXPECT_EQ(BlasKernels::rank("Nehalem"), 0);
  EXPECT_EQ(BlasKernels::rank("Unknown"), 0);
  EXPECT_LT(BlasKernels::rank("Prescott"), BlasKernels::rank("Sandybridge"));
  EXPECT_LT(BlasKernels::rank("Sandybridge"), BlasKernels::rank("Haswell"));
  EXPECT_EQ(BlasKernels::rank("Haswell"), BlasKernels::rank("zen"));
  EXPECT_LT(BlasKernels::rank("HASWELL"), BlasKernels::rank("SkylakeX"));
  EXPECT_LT(BlasKernels::rank("skylakex"), BlasKernels::rank("Cooperlake"));
}

// After the choice: the set the user named where they named one, otherwise one at least as fast
// as this CPU allows (where this OpenBLAS was built with it), and products still right.
TEST(BlasKernels, RunsTheNamedOrTheFastestSetAndItsProductsAreRight) {
  BlasKernels::chooseFastest();
  if (!openBlasInProcess()) {
    torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
    EXPECT_EQ(BlasKernels::inUse(), "") << "no OpenBLAS in the process";
    GTEST_SKIP() << "the BLAS behind LibTorch here is not OpenBLAS";
  }
  const std::string kernels = BlasKernels::inUse();
  EXPECT_FALSE(kernels.empty()) << "Debian's OpenBLAS is a DYNAMIC_ARCH build";
  EXPECT_NE(kernels, "Unknown");
  const char* named = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(BlasKernels::namedByEnvironment(), named != nullptr);
  if (named) {
    EXPECT_EQ(BlasKernels::replaced(), "") << "a set the user named is kept";
    if (BlasKernels::rank(named) > 0) {
      EXPECT_EQ(strcasecmp(named, kernels.c_str()), 0) << named << " named, " << kernels;
    }
  } else {
    const std::string best = BlasKernels::fastestFor(BlasKernels::thisCpu());
    if (!best.empty() && BlasKernels::builtWith(best)) {
      EXPECT_GE(BlasKernels::rank(kernels), BlasKernels::rank(best))
          << kernels << " runs on a CPU that runs " << best;
    }
    if (!BlasKernels::replaced().empty()) {
      EXPECT_LT(BlasKernels::rank(BlasKernels::replaced()), BlasKernels::rank(kernels));
    }
  }
  // The replaced table computes: a 96 x 200 x 72 product against double loops, relative to the
  // size of the terms (float32 products over 200 terms).
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  torch::Tensor a = torch::empty({96, 200}), b = torch::empty({200, 72});
  for (float* p = a.data_ptr<float>(); p != a.data_ptr<float>() + a.numel(); ++p) *p = normal(rng);
  for (float* p = b.data_ptr<float>(); p != b.data_ptr<float>() + b.numel(); ++p) *p = normal(rng);
  const torch::Tensor c = torch::mm(a, b);
  const auto A = a.accessor<float, 2>(), B = b.accessor<float, 2>(), C = c.accessor<float, 2>();
  for (int64_t i = 0; i < 96; ++i) {
    for (int64_t j = 0; j < 72; ++j) {
      double want = 0, magnitude = 0;
      for (int64_t k = 0; k < 200; ++k) {
        want += static_cast<double>(A[i][k]) * B[k][j];
        magnitude += std::abs(static_cast<double>(A[i][k]) * B[k][j]);
      }
      ASSERT_LE(std::abs(C[i][j] - want), 200 * 6e-8 * magnitude) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace attnscope
