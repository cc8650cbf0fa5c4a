// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/flush_denormals.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#include <xmmintrin.h>

#include <limits>
#include <vector>

#include "attnscope/float_tensor.h"

namespace attnscope {
namespace {

// Through volatile memory, so that the compiler cannot fold the products at compile time (where
// the control register does not apply).
float product(float a, float b) {
  volatile float x = a, y = b;
  volatile float r = x * y;
  return r;
}

#if defined(__x86_64__) || defined(__SSE__)
TEST(FlushDenormals, SubnormalsAreZeroInsideTheGuardAndRestoredAfter) {
  const float tiny = std::numeric_limits<float>::min();  // smallest normal, 1.18e-38
  ASSERT_GT(product(tiny, 0.5f), 0.0f) << "subnormal results exist before the guard";
  {
    const FlushDenormals guard;
    EXPECT_EQ(product(tiny, 0.5f), 0.0f) << "flush to zero";
    const float subnormal = std::numeric_limits<float>::denorm_min();
    EXPECT_EQ(product(subnormal, 1e30f), 0.0f) << "denormals read as zero";
    // Tensor work on the pool's threads too (two threads: each runs a chunk).
    at::set_num_threads(2);
    const torch::Tensor t = torch::full({1 << 16}, tiny) * 0.5f;
    EXPECT_EQ(t.abs().max().item<float>(), 0.0f);
  }
  EXPECT_GT(product(tiny, 0.5f), 0.0f) << "the thread's own setting comes back";
}

// Every thread of the pool, not only threads created under the guard (which take their creator's
// setting): the pool's threads are started and cleared first. This fails when the library's
// at::parallel_for is compiled without OpenMP (its pragmas then do nothing and the whole range runs
// on the caller), which is also what kept the attention kernels on one core.
TEST(FlushDenormals, ReachesThreadsThePoolStartedBefore) {
#ifndef _OPENMP
  GTEST_SKIP() << "built without OpenMP (core/CMakeLists.txt warned)";
#else
  constexpr unsigned kFlush = 0x8040;  // MXCSR's flush-to-zero and denormals-are-zero bits
  at::set_num_threads(2);
#pragma omp parallel num_threads(2)
  _mm_setcsr(_mm_getcsr() & ~kFlush);
  std::vector<int> flushed(2, -1);
  {
    const FlushDenormals guard;
#pragma omp parallel num_threads(2)
    flushed[static_cast<std::size_t>(omp_get_thread_num())] = (_mm_getcsr() & kFlush) == kFlush;
  }
  EXPECT_EQ(flushed, (std::vector<int>{1, 1}));
#endif
}
#endif

TEST(FloatTensorStorage, ZerosUnlessAskedForUnwrittenStorage) {
  const FloatTensor zeros({3, 4});
  for (float v : zeros.data) EXPECT_EQ(v, 0.0f);
  const FloatTensor raw = FloatTensor::uninitialized({2, 3, 5});
  EXPECT_EQ(raw.shape, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(raw.data.size(), 30u);
  FloatTensor::Storage filled(7, 1.5f);  // an explicit value is still written
  for (float v : filled) EXPECT_EQ(v, 1.5f);
}

}  // namespace
}  // namespace attnscope
