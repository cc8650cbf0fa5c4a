// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope {

/// Which of OpenBLAS's kernel sets the process's matrix products run on: chosen once per process
/// (the fastest this CPU runs, unless the user named one), and named in reports.
///
/// Why: OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels when it is loaded, from the
/// CPU or from OPENBLAS_CORETYPE, and the choice decides every projection's time. Debian's
/// OpenBLAS 0.3.21 does not know recent Intel CPUs (cpuinfo model 207, an Xeon with AVX-512 BF16)
/// and falls back to its "Prescott" (SSE3) set: sgemm at n = 2048 ran at 15 GFLOP/s there against
/// ~100 on the "Cooperlake" set the CPU runs. On one AMD EPYC the "Haswell" set that the
/// environment named ran at 102 GFLOP/s and "Cooperlake" at 199. Benchmarks from two machines,
/// or two environments, compare only with this named.
class BlasKernels final {
 public:
  /// Once per process, before the first matrix product: where OPENBLAS_CORETYPE is unset and
  /// OpenBLAS picked an older set than this CPU runs (fastestForThisCpu), re-initialises OpenBLAS's
  /// kernel table on that set. OpenBLAS reads OPENBLAS_CORETYPE in gotoblas_dynamic_init, which
  /// it exports: re-running it with the variable set is the same choice the variable makes at
  /// load, without restarting the process. Nothing happens where the BLAS is not OpenBLAS with
  /// runtime dispatch, where the user named a set, or where the set is already as fast.
  /// Call it while no other thread runs BLAS (first thing in main); later calls do nothing.
  static void chooseFastest();

  /// The kernel set in use ("Haswell", "SkylakeX", ...), or "" where the BLAS in the process is
  /// not OpenBLAS with runtime dispatch.
  static std::string inUse();
  /// Whether OPENBLAS_CORETYPE named the set (OpenBLAS obeys it rather than its detection).
  static bool namedByEnvironment();
  /// The set OpenBLAS had picked itself where chooseFastest replaced it ("Prescott"), else "".
  static std::string replaced();

  /// The fastest OpenBLAS kernel set for a CPU with these features, or "" where none is better
  /// than what any OpenBLAS picks by itself (no AVX).
  struct CpuFeatures {
    bool avx = false, avx2 = false, fma = false;
    bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
    bool avx512bf16 = false;
    bool amd = false;
  };
  static std::string fastestFor(const CpuFeatures& cpu);
  /// Whether the OpenBLAS in the process has this kernel set (false where there is none).
  static bool builtWith(const std::string& kernelSet);
  static CpuFeatures thisCpu();
  /// Orders kernel sets by the instructions they use: 0 for SSE-era sets and unknown names,
  /// 1 Sandybridge (AVX), 2 Haswell and Zen (AVX2 + FMA), 3 SkylakeX (AVX-512), 4 Cooperlake
  /// (AVX-512 BF16). Case-insensitive, as OpenBLAS reads OPENBLAS_CORETYPE.
  static int rank(const std::string& kernelSet);
};

}  // namespace attnscope
