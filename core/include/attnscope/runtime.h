// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

#include "attnscope/run_request.h"

namespace attnscope {

/// Sets LibTorch's intra-op thread count. 0 means every core: LibTorch reports 1 on some machines
/// unless told. Called once automatically before the first run.
void setThreadCount(int threads = 0);
int threadCount();

bool cudaAvailable();
/// "cpu" or "cuda:0"; throws Error(Unavailable) for Cuda on a machine without CUDA.
std::string resolveDevice(DeviceKind kind);
/// "LibTorch 1.13.0, 2 threads, CUDA unavailable"
std::string runtimeDescription();

}  // namespace attnscope
