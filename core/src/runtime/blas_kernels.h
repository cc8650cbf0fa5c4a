// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope {

/// Which of OpenBLAS's kernel sets the process's matrix products run on, for reports.
///
/// Why: OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels when it is loaded, from the
/// CPU or from OPENBLAS_CORETYPE, and the choice halves or doubles every projection's time. Seen
/// on one AMD EPYC machine of this project: torch::mm at n = 2048 ran at 102 GFLOP/s on the
/// "Haswell" (AVX2) set that the environment named and at 199 GFLOP/s on the "Cooperlake"
/// (AVX-512) set OpenBLAS picks there by itself. Benchmarks from two machines, or two
/// environments, compare only with this named.
class BlasKernels final {
 public:
  /// The kernel set in use ("Haswell", "SkylakeX", ...), or "" where the BLAS in the process is
  /// not OpenBLAS with runtime dispatch.
  static std::string inUse();
  /// Whether OPENBLAS_CORETYPE named the set (OpenBLAS obeys it rather than its detection).
  static bool namedByEnvironment();
};

}  // namespace attnscope
