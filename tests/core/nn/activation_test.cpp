// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/activation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "../expect_error.h"
#include "nn_test_util.h"

namespace attnscope {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/// transformers' ACT2FN formulas, one per accepted name.
const std::map<std::string, std::function<double(double)>>& formulas() {
  static const std::map<std::string, std::function<double(double)>> table = {
      {"gelu", [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_python", [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_new", geluTanh},
      {"gelu_pytorch_tanh", geluTanh},
      {"gelu_fast",
       [](double x) {
         return 0.5 * x * (1.0 + std::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
       }},
      {"quick_gelu", [](double x) { return x * sigmoid(1.702 * x); }},
      {"relu", [](double x) { return std::max(x, 0.0); }},
      {"relu2", [](double x) { return std::max(x, 0.0) * std::max(x, 0.0); }},
      {"silu", [](double x) { return x * sigmoid(x); }},
      {"swish", [](double x) { return x * sigmoid(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", sigmoid},
      {"linear", [](double x) { return x; }},
      {"gelu_accurate", geluTanh},
      {"gelu_10",
       [](double x) {
         return std::clamp(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))), -10.0, 10.0);
       }},
      {"laplace",
       [](double x) {
         return 0.5 * (1.0 + std::erf((x - 0.707107) / (0.282095 * std::sqrt(2.0))));
       }},
      {"leaky_relu", [](double x) { return x >= 0 ? x : 0.01 * x; }},
      {"mish", [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {"relu6", [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"gelu_python_tanh", geluTanh},
      {"hardswish", [](double x) { return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0; }},
      {"sqrtsoftplus", [](double x) { return std::sqrt(std::log1p(std::exp(x))); }},
      // The learned ones with the tensors of kLearned below.
      {"prelu", [](double x) { return x >= 0 ? x : 0.3 * x; }},
      {"xielu",
       [](double x) {
         const double beta = 0.5, alphaP = std::log1p(std::exp(0.2)),
                      alphaN = beta + std::log1p(std::exp(-0.1));
         return x > 0 ? alphaP * x * x + beta * x
                      : (std::expm1(std::min(x, -1e-6)) - x) * alphaN + beta * x;
       }},
  };
  return table;
}

// prelu: weight 0.3; xielu: alpha_p 0.2, alpha_n -0.1, beta 0.5, eps -1e-6 (raw, before softplus).
std::vector<torch::Tensor> learnedTensors(Activation a) {
  if (a == Activation::Prelu) return {torch::full({1}, 0.3)};
  if (a == Activation::Xielu)
    return {torch::full({1}, 0.2), torch::full({1}, -0.1), torch::tensor(0.5),
            torch::tensor(-1e-6)};
  return {};
}

TEST(Activation, EveryNameParsesAndMatchesItsFormula) {
  const std::vector<std::string> names = activationNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* required : {"gelu", "gelu_new", "gelu_pytorch_tanh", "quick_gelu", "relu",
                               "relu2", "silu", "tanh", "sigmoid", "linear"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  const torch::Tensor x = torch::linspace(-6.0, 6.0, 241);
  const std::vector<double> xv = test::toDoubles(x);
  for (const std::string& name : names) {
    const auto f = formulas().find(name);
    ASSERT_NE(f, formulas().end()) << name << " has no reference formula in this test";
    const Activation a = parseActivation(name);
    const torch::Tensor y = activate(a, x, learnedTensors(a));
    EXPECT_EQ(activationParameters(a).size(), learnedTensors(a).size()) << name;
    EXPECT_EQ(test::shapeOf(y), test::shapeOf(x)) << name;
    std::vector<double> want;
    for (double v : xv) want.push_back(f->second(v));
    test::expectAllNear(y, want, name == "relu2" ? 1e-4 : 1e-5, name);
    EXPECT_FALSE(activationExpression(a).empty()) << name;
  }
  EXPECT_EQ(parseActivation("gelu_new"), Activation::GeluTanh);
  EXPECT_EQ(parseActivation("gelu_pytorch_tanh"), Activation::GeluTanh);
  EXPECT_NE(parseActivation("gelu"), Activation::GeluTanh);
  // Out of place, any shape.
  const torch::Tensor m = test::randomTensor({2, 3, 4}, 1, 2.0), copy = m.clone();
  EXPECT_EQ(test::shapeOf(activate(Activation::Silu, m)), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_TRUE(torch::equal(m, copy));
}

// The feed-forward block's in-place activation: the same numbers as activate() for every name,
// written over its input for the ones that can be, and out of place (with a working backward)
// when the input needs a gradient.
TEST(Activation, InPlaceGivesTheSameNumbersAndKeepsGradients) {
  for (const std::string& name : activationNames()) {
    const Activation a = parseActivation(name);
    const torch::Tensor x = test::randomTensor({3, 5, 7}, 4, 3.0);
    const torch::Tensor want = activate(a, x, learnedTensors(a));
    torch::Tensor mine = x.clone();
    const torch::Tensor got = activateInPlace(a, mine, learnedTensors(a));
    EXPECT_TRUE(torch::equal(got, want)) << name;
    const bool inPlace = a == Activation::Gelu || a == Activation::GeluTanh ||
                         a == Activation::Relu || a == Activation::Silu || a == Activation::Tanh ||
                         a == Activation::Sigmoid;
    if (inPlace) {
      EXPECT_EQ(got.data_ptr(), mine.data_ptr()) << name;
    }
  }
  const torch::Tensor leaf = test::randomTensor({4, 6}, 5, 2.0).requires_grad_(true);
  const torch::Tensor h = leaf * 1.0;  // a non-leaf that needs a gradient, as in a backward run
  const torch::Tensor y = activateInPlace(Activation::GeluTanh, h);
  EXPECT_NE(y.data_ptr(), h.data_ptr());
  y.sum().backward();
  const torch::Tensor ref = leaf.detach().clone().requires_grad_(true);
  torch::gelu(ref, "tanh").sum().backward();
  EXPECT_TRUE(torch::allclose(leaf.grad(), ref.grad()));
}

TEST(Activation, ExactAndTanhGeluDifferWhereTheTestLooks) {
  // The tolerance above separates the two GELUs: they differ by far more than 1e-5 on the grid.
  double worst = 0;
  for (double x = -6; x <= 6; x += 0.05)
    worst = std::max(worst, std::abs(formulas().at("gelu")(x) - geluTanh(x)));
  EXPECT_GT(worst, 1e-4);
}

TEST(Activation, UnknownNameThrowsFormatListingTheSupportedOnes) {
  test::expectError([] { parseActivation("gelu_foo"); }, ErrorKind::Format, "gelu_foo");
  test::expectError([] { parseActivation("gelu_foo"); }, ErrorKind::Format, "supported");
  test::expectError([] { parseActivation("prelu_foo", "hidden_act"); }, ErrorKind::Format,
                    "hidden_act");
  // A learned activation without its tensors is refused, not computed with garbage.
  test::expectError([] { activate(Activation::Prelu, torch::ones({2})); },
                    ErrorKind::InvalidArgument, "learned tensors");
  test::expectError([] { parseActivation("GELU"); }, ErrorKind::Format, "quick_gelu");  // the list
}

}  // namespace
}  // namespace attnscope
