// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/widened_weights.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "nn/compute_weight.h"
#include "nn_test_util.h"

namespace attnscope {
namespace {

torch::Tensor bf16(const std::vector<int64_t>& shape, uint32_t seed) {
  return test::randomTensor(shape, seed).to(torch::kBFloat16);
}

TEST(WidenedWeights, KeepsBitIdenticalCopiesWithinTheBudget) {
  WidenedWeights cache;
  const torch::Tensor a = bf16({8, 16}, 1), b = bf16({4, 16}, 2);
  const torch::Tensor wa = cache.widen(a, 1024);
  EXPECT_TRUE(torch::equal(wa, a.to(torch::kFloat)));
  EXPECT_EQ(cache.bytes(), 8u * 16 * 4);
  EXPECT_EQ(cache.widen(a, 1024).data_ptr(), wa.data_ptr()) << "the second use reads the copy";
  // b does not fit what is left of 1024 bytes (512 + 256 > 600): widened, not kept.
  const torch::Tensor wb = cache.widen(b, 600);
  EXPECT_TRUE(torch::equal(wb, b.to(torch::kFloat)));
  EXPECT_EQ(cache.bytes(), 512u);
  EXPECT_NE(cache.widen(b, 600).data_ptr(), wb.data_ptr());
}

TEST(WidenedWeights, ASliceMadeAgainFindsItsCopyAndOtherSlicesDoNot) {
  WidenedWeights cache;
  const torch::Tensor fused = bf16({6, 4}, 3);
  const torch::Tensor first = cache.widen(fused.narrow(0, 0, 2), 1 << 20);
  EXPECT_EQ(cache.widen(fused.narrow(0, 0, 2), 1 << 20).data_ptr(), first.data_ptr());
  const torch::Tensor second = cache.widen(fused.narrow(0, 2, 2), 1 << 20);
  EXPECT_TRUE(torch::equal(second, fused.narrow(0, 2, 2).to(torch::kFloat)));
  EXPECT_TRUE(torch::equal(cache.widen(fused.t(), 1 << 20), fused.t().to(torch::kFloat)))
      << "a transposed view has other strides: its own copy";
}

TEST(WidenedWeights, WeightsThatNeedAGradientAreNeverKept) {
  WidenedWeights cache;
  const torch::Tensor w = bf16({3, 3}, 4).requires_grad_();
  const torch::Tensor wide = cache.widen(w, 1 << 20);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_TRUE(wide.requires_grad());
  {
    torch::NoGradGuard noGrad;
    cache.widen(w, 1 << 20);
    EXPECT_EQ(cache.bytes(), 36u) << "without gradients a copy is a constant";
  }
}

TEST(WidenedWeights, ComputeWeightUsesTheScopesCacheAndMemoryGoesBackWithIt) {
  const uint64_t before = WidenedWeights::bytesInProcess();
  const torch::Tensor w = bf16({16, 16}, 5);
  {
    WidenedWeights cache;
    {
      const WidenedWeights::Scope scope(&cache, 1 << 20);
      const torch::Tensor a = computeWeight(w), b = computeWeight(w);
      EXPECT_EQ(a.data_ptr(), b.data_ptr());
      EXPECT_EQ(WidenedWeights::bytesInProcess(), before + 16 * 16 * 4);
      {
        const WidenedWeights::Scope none(&cache, 0);
        EXPECT_EQ(WidenedWeights::active(), nullptr) << "budget 0: per use";
        EXPECT_NE(computeWeight(w).data_ptr(), a.data_ptr());
      }
      EXPECT_EQ(WidenedWeights::active(), &cache) << "the outer scope is restored";
    }
    EXPECT_EQ(WidenedWeights::active(), nullptr);
    EXPECT_NE(computeWeight(w).data_ptr(), computeWeight(w).data_ptr()) << "no scope: per use";
  }
  EXPECT_EQ(WidenedWeights::bytesInProcess(), before);
  const torch::Tensor f = test::randomTensor({2, 2}, 6);
  EXPECT_EQ(computeWeight(f).data_ptr(), f.data_ptr()) << "float32 passes through";
}

}  // namespace
}  // namespace attnscope
