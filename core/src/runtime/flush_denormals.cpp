// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/flush_denormals.h"

#include <ATen/Parallel.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define ATTNSCOPE_HAVE_MXCSR 1
#endif

namespace attnscope {

namespace {
#ifdef ATTNSCOPE_HAVE_MXCSR
constexpr unsigned kFlushToZero = 0x8000;       // MXCSR.FTZ: subnormal results become 0
constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ: subnormal inputs read as 0
#endif
}  // namespace

void FlushDenormals::onThisThread() {
#ifdef ATTNSCOPE_HAVE_MXCSR
  _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero);
#endif
}

FlushDenormals::FlushDenormals() {
  // The pool's threads keep their own control register: one chunk each sets it there (the
  // setting stays; those threads only ever run tensor work).
  const int64_t threads = at::get_num_threads();
  if (threads > 1) at::parallel_for(0, threads, 1, [](int64_t, int64_t) { onThisThread(); });
}

FlushDenormals::ThisThread::ThisThread() {
#ifdef ATTNSCOPE_HAVE_MXCSR
  m_saved = _mm_getcsr();
#endif
  onThisThread();
}

FlushDenormals::ThisThread::~ThisThread() {
#ifdef ATTNSCOPE_HAVE_MXCSR
  _mm_setcsr(m_saved);
#endif
}

}  // namespace attnscope
