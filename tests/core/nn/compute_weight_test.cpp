// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/compute_weight.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

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
      EXPECT_LT((got.to(torch::kDouble) - want).abs().max().item<double>(), 1e-5)
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

}  // namespace
}  // namespace attnscope
