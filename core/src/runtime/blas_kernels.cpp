// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/blas_kernels.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>
#include <mutex>

namespace attnscope {

namespace {

std::once_flag g_chooseOnce;
std::string g_replaced;

// Looked up at run time, not linked: the BLAS behind LibTorch is whatever libblas.so.3 Debian's
// alternatives name (OpenBLAS, BLIS, the reference BLAS), and only OpenBLAS's DYNAMIC_ARCH build
// exports these.
template <typename F>
F openBlasFunction(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

// The data symbol OpenBLAS defines for each kernel set it was built with ("gotoblas_COOPERLAKE").
bool BlasKernels::builtWith(const std::string& kernelSet) {
  std::string symbol = "gotoblas_";
  for (const char c : kernelSet) symbol += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return dlsym(RTLD_DEFAULT, symbol.c_str()) != nullptr;
}

int BlasKernels::rank(const std::string& kernelSet) {
  const char* s = kernelSet.c_str();
  if (!strcasecmp(s, "Cooperlake") || !strcasecmp(s, "SapphireRapids")) return 4;
  if (!strcasecmp(s, "SkylakeX")) return 3;
  if (!strcasecmp(s, "Haswell") || !strcasecmp(s, "Zen")) return 2;
  if (!strcasecmp(s, "Sandybridge")) return 1;
  return 0;
}

std::string BlasKernels::fastestFor(const CpuFeatures& cpu) {
  const bool avx512 = cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl;
  if (avx512 && cpu.avx512bf16) return "Cooperlake";
  if (avx512) return "SkylakeX";
  // OpenBLAS's Zen set is its Haswell kernels with AMD's blocking sizes.
  if (cpu.avx2 && cpu.fma) return cpu.amd ? "Zen" : "Haswell";
  if (cpu.avx) return "Sandybridge";
  return "";
}

BlasKernels::CpuFeatures BlasKernels::thisCpu() {
  CpuFeatures cpu;
#if defined(__x86_64__) && defined(__GNUC__)
  // libgcc's detection also checks that the OS saves the AVX / AVX-512 registers (XGETBV).
  __builtin_cpu_init();
  cpu.avx = __builtin_cpu_supports("avx");
  cpu.avx2 = __builtin_cpu_supports("avx2");
  cpu.fma = __builtin_cpu_supports("fma");
  cpu.avx512f = __builtin_cpu_supports("avx512f");
  cpu.avx512bw = __builtin_cpu_supports("avx512bw");
  cpu.avx512dq = __builtin_cpu_supports("avx512dq");
  cpu.avx512vl = __builtin_cpu_supports("avx512vl");
#if defined(__clang__)
  cpu.avx512bf16 = false;  // clang 14 does not name it; SkylakeX's kernels run there as well
#else
  cpu.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#endif
  cpu.amd = __builtin_cpu_is("amd");
#endif
  return cpu;
}

void BlasKernels::chooseFastest() {
  std::call_once(g_chooseOnce, [] {
    if (namedByEnvironment()) return;
    const auto quit = openBlasFunction<void (*)()>("gotoblas_dynamic_quit");
    const auto init = openBlasFunction<void (*)()>("gotoblas_dynamic_init");
    if (!quit || !init) return;
    const std::string current = inUse();
    std::string target = fastestFor(thisCpu());
    // A build of OpenBLAS without the newest set: take the next one down that it has.
    if (target == "Cooperlake" && !builtWith(target)) target = "SkylakeX";
    if (target == "SkylakeX" && !builtWith(target)) target = "Haswell";
    if (target.empty() || !builtWith(target) || rank(target) <= rank(current)) return;
    // gotoblas_dynamic_init returns at once while a set is installed; quit only clears the
    // pointer. The variable is removed again so that the report still says the user named none
    // and child processes (Python references in the tests) make their own choice.
    setenv("OPENBLAS_CORETYPE", target.c_str(), 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
    g_replaced = current;
  });
}

std::string BlasKernels::inUse() {
  const auto corename = openBlasFunction<char* (*)()>("gotoblas_corename");
  return corename ? std::string(corename()) : std::string();
}

bool BlasKernels::namedByEnvironment() { return std::getenv("OPENBLAS_CORETYPE") != nullptr; }

std::string BlasKernels::replaced() { return g_replaced; }

}  // namespace attnscope
