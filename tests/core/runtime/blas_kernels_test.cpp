// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/blas_kernels.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <strings.h>
#include <torch/torch.h>

#include <cstdlib>

namespace attnscope {
namespace {

// The report names the set OpenBLAS runs, where OpenBLAS is the BLAS, and the one the environment
// named where it named one OpenBLAS knows.
TEST(BlasKernels, NamesTheSetOpenBlasRuns) {
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));  // the BLAS is loaded and initialised
  void* openblas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (!openblas) {
    EXPECT_EQ(BlasKernels::inUse(), "") << "no OpenBLAS in the process";
    GTEST_SKIP() << "the BLAS behind LibTorch here is not OpenBLAS";
  }
  dlclose(openblas);
  const std::string kernels = BlasKernels::inUse();
  EXPECT_FALSE(kernels.empty()) << "Debian's OpenBLAS is a DYNAMIC_ARCH build";
  EXPECT_NE(kernels, "Unknown");
  const char* named = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(BlasKernels::namedByEnvironment(), named != nullptr);
  if (named && (!strcasecmp(named, "Haswell") || !strcasecmp(named, "SkylakeX"))) {
    EXPECT_EQ(strcasecmp(named, kernels.c_str()), 0) << named << " named, " << kernels << " in use";
  }
}

}  // namespace
}  // namespace attnscope
