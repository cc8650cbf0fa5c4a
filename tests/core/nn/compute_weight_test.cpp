// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/compute_weight.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "attnscope/error.h"
#include "nn/widened_weights.h"
#include "runtime/cancel_scope.h"

namespace attnscope {
namespace {

// The matrix-vector path for one or two rows and the sgemm path beyond give torch::nn::Linear's
// numbers (against a double-precision product), in x's shape, with and without a bias, F16
// weights widened, and gradients through both.
TEST(LinearForward, EveryRowCountMatchesTheDoubleProduct) {
  torch::manual_seed(3);
  const torch::Tensor w = torch::randn({37, 19});
  const torch::Tensor b = torch::randn({37});
  for (const auto& shape : std::vector<std::vector<int64_t>>{
           {19}, {1, 19}, {1, 1, 19}, {2, 19}, {1, 2, 19}, {3, 19}, {2, 5, 19}}) {
    const torch::Tensor x = torch::randn(shape);
    for (const bool withBias : {false, true}) {
      const torch::Tensor got = linearForward(x, w, withBias ? b : torch::Tensor());
      torch::Tensor want = torch::matmul(x.to(torch::kDouble), w.to(torch::kDouble).t());
      if (withBias) want = want + b.to(torch::kDouble);
      ASSERT_EQ(got.sizes(), want.sizes()) << x.sizes();
      EXPECT_EQ(got.scalar_type(), torch::kFloat);
      EXPECT_LT(
          ((got.to(torch::kDouble) - want).abs() / want.abs().clamp_min(1.0)).max().item<double>(),
          1e-5)
          << x.sizes() << (withBias ? " with bias" : "");
    }
  }
  const torch::Tensor x = torch::randn({1, 1, 19});
  const torch::Tensor half = linearForward(x, w.to(torch::kHalf), b.to(torch::kHalf));
  EXPECT_LT((half - torch::nn::functional::linear(x, w.to(torch::kHalf).to(torch::kFloat),
                                                  b.to(torch::kHalf).to(torch::kFloat)))
                .abs()
                .max()
                .item<float>(),
            1e-5)
      << "F16 weights widened";
  for (const int64_t rows : {1, 4}) {
    const torch::Tensor xg = torch::randn({rows, 19}).requires_grad_(true);
    linearForward(xg, w, b).sum().backward();
    // d(sum(x Wᵀ + b))/dx = the column sums of W, for every row.
    EXPECT_TRUE(torch::allclose(xg.grad(), w.sum(0).expand({rows, 19}), 1e-5, 1e-5)) << rows;
  }
}

// Compact weights in a run (no gradients) are widened a block of rows at a time: a weight of
// several blocks (4096 wide: 256 rows a block on one thread, 1024 on more; 2600 rows end in a
// partial block either way) gives the product of its widened values in every row count, bias
// included.
TEST(LinearForward, CompactWeightsWidenedByBlocksMatchTheWholeProduct) {
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({2600, 4096}).to(torch::kBFloat16);
  const torch::Tensor b = torch::randn({2600}).to(torch::kBFloat16);
  const torch::Tensor wide = w.to(torch::kDouble), bias = b.to(torch::kDouble);
  torch::NoGradGuard noGrad;
  for (const int64_t rows : {1, 2, 5}) {
    const torch::Tensor x = torch::randn({rows, 4096});
    const torch::Tensor got = linearForward(x, w, b);
    const torch::Tensor want = torch::matmul(x.to(torch::kDouble), wide.t()) + bias;
    ASSERT_EQ(got.sizes(), want.sizes());
    // Sums of 4096 products of N(0, 1) values: float32's rounding error grows with the size of
    // the terms summed, not of the sum (which cancels to near 0 in places), so it is measured
    // against each element's root sum of squared terms (about 64 here).
    const torch::Tensor terms =
        torch::matmul(x.to(torch::kDouble).square(), wide.square().t()).sqrt().clamp_min(1.0);
    const double err = ((got.to(torch::kDouble) - want).abs() / terms).max().item<double>();
    EXPECT_LT(err, 1e-5) << rows << " rows";
    // A run that keeps float32 copies (the window's) keeps none of a linear weight: it reads the
    // compact blocks, faster than twice the bytes, and the numbers do not change.
    WidenedWeights cache;
    torch::Tensor withCache;
    {
      const WidenedWeights::Scope scope(&cache, 1ull << 30);
      withCache = linearForward(x, w, b);
    }
    EXPECT_EQ(cache.bytes(), 0u);
    EXPECT_TRUE(torch::equal(withCache, got)) << rows << " rows";
  }
}

// A compact weight's product polls the run's cancel flag between blocks of weight rows: a long
// input's layer stops within a block. Unset, the same call computes.
TEST(LinearForward, ACompactWeightsProductStopsWhenTheRunIsCancelled) {
  torch::NoGradGuard noGrad;
  const torch::Tensor x = torch::randn({300, 64});
  const torch::Tensor w = torch::randn({4096, 64}).to(torch::kBFloat16);  // several blocks
  std::atomic<bool> flag{false};
  {
    const CancelScope scope(&flag);
    EXPECT_TRUE(torch::allclose(linearForward(x, w, {}), torch::matmul(x, w.to(torch::kFloat).t()),
                                1e-4, 1e-4));
    flag = true;
    try {
      linearForward(x, w, {});
      ADD_FAILURE() << "a cancelled run's product ran to its end";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Cancelled);
    }
  }
  EXPECT_NO_THROW(linearForward(x, w, {})) << "outside the scope the flag is not read";
}

}  // namespace
}  // namespace attnscope
