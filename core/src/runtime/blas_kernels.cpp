// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/blas_kernels.h"

#include <dlfcn.h>

#include <cstdlib>

namespace attnscope {

std::string BlasKernels::inUse() {
  // Looked up at run time, not linked: the BLAS behind LibTorch is whatever libblas.so.3 Debian's
  // alternatives name (OpenBLAS, BLIS, the reference BLAS), and only OpenBLAS's DYNAMIC_ARCH
  // build exports this.
  const auto corename = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_corename"));
  return corename ? std::string(corename()) : std::string();
}

bool BlasKernels::namedByEnvironment() { return std::getenv("OPENBLAS_CORETYPE") != nullptr; }

}  // namespace attnscope
