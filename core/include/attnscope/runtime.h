// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

#include "attnscope/run_request.h"

namespace attnscope {

/// Sets LibTorch's intra-op thread count. 0 means every core that other processes leave free at
/// the start of each run (at least 1): LibTorch reports 1 on some machines unless told, and
/// OpenMP teams collapse when one of their threads shares a core. Called once automatically
/// (with 0) before the first run. A count above the cores this process may use (its CPU
/// affinity) is lowered to them: more threads only take turns, and thousands hang.
void setThreadCount(int threads = 0);
int threadCount();
/// Whether this thread's runs pick their thread count from the load (setThreadCount(0), the
/// default) rather than a count the caller fixed.
bool threadCountFollowsLoad();

/// Runs matrix products on the fastest OpenBLAS kernels this CPU supports where OpenBLAS picked
/// older ones and the user named none (OPENBLAS_CORETYPE). Call first thing in main, while no
/// other thread computes; the first run calls it anyway. See runtime/blas_kernels.h.
void chooseBlasKernels();

/// Bytes of float32 weight copies that every open model keeps across runs
/// (RunLimits::weightCacheBytes); they are freed with their model.
uint64_t weightCacheBytesInProcess();

bool cudaAvailable();
/// "cpu" or "cuda:0"; throws Error(Unavailable) for Cuda on a machine without CUDA.
std::string resolveDevice(DeviceKind kind);
/// "LibTorch 1.13.0, 2 threads, CUDA unavailable, OpenBLAS Haswell kernels": the kernels (with
/// " (named by OPENBLAS_CORETYPE)" where the environment chose them, or " (chosen by attnscope;
/// OpenBLAS picked Prescott)" where chooseBlasKernels replaced OpenBLAS's own pick) decide every
/// GEMM's speed.
std::string runtimeDescription();

}  // namespace attnscope
