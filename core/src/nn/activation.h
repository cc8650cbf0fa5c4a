// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace attnscope {

/// The element-wise non-linearities Hugging Face configs name (`activation_function`,
/// `hidden_act`, `hidden_activation`), each with the formula of transformers' ACT2FN.
enum class Activation {
  Gelu,
  GeluTanh,
  GeluFast,
  QuickGelu,
  Relu,
  Relu2,
  Silu,
  Tanh,
  Sigmoid,
  Identity,
  Gelu10,     // GELU clipped to [-10, 10]
  Laplace,    // 0.5 · (1 + erf((x - 0.707107) / (0.282095 · √2)))
  LeakyRelu,  // negative slope 0.01
  Mish,       // x · tanh(softplus(x))
  Relu6,      // min(max(x, 0), 6)
};

/// "gelu_new" -> GeluTanh. Throws Error(Format) `<what> "foo" is not supported; supported: …`.
Activation parseActivation(const std::string& name, const std::string& what = "activation");
/// Every name parseActivation accepts, sorted.
std::vector<std::string> activationNames();
/// The PyTorch expression, for the trace: "F.gelu(h, approximate='tanh')".
std::string activationExpression(Activation a);

/// x: any shape -> the same shape. Out of place.
torch::Tensor activate(Activation a, const torch::Tensor& x);

}  // namespace attnscope
