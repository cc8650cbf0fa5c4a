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
  Gelu10,        // GELU clipped to [-10, 10]
  Laplace,       // 0.5 · (1 + erf((x - 0.707107) / (0.282095 · √2)))
  LeakyRelu,     // negative slope 0.01
  Mish,          // x · tanh(softplus(x))
  Relu6,         // min(max(x, 0), 6)
  Hardswish,     // x · relu6(x + 3) / 6
  SqrtSoftplus,  // √softplus(x)
  Prelu,         // max(0, x) + a · min(0, x), with a learned a (nn.PReLU: "weight" [1])
  Xielu,         // xIELU: x > 0: α_p x² + βx, else (expm1(min(x, ε)) − x) α_n + βx, where
                 // α_p = softplus(alpha_p), α_n = β + softplus(alpha_n); alpha_p, alpha_n [1]
                 // are learned, beta and eps [] are saved buffers
};

/// The tensors a learned activation holds under its module ("act" in GPT-2's MLP), in the
/// order activate() takes them, with their shapes; empty for the fixed functions.
std::vector<std::pair<std::string, std::vector<int64_t>>> activationParameters(Activation a);

/// The module of a learned activation, named like transformers' (nn.PReLU, XIELUActivation), so
/// its tensors load from the checkpoint like every other weight.
struct LearnedActivationImpl : torch::nn::Module {
  explicit LearnedActivationImpl(Activation a);
  std::vector<torch::Tensor> parameters;  // activationParameters(a), loaded
};
TORCH_MODULE(LearnedActivation);

/// "gelu_new" -> GeluTanh. Throws Error(Format) `<what> "foo" is not supported; supported: …`.
Activation parseActivation(const std::string& name, const std::string& what = "activation");
/// Every name parseActivation accepts, sorted.
std::vector<std::string> activationNames();
/// The PyTorch expression, for the trace: "F.gelu(h, approximate='tanh')".
std::string activationExpression(Activation a);

/// x: any shape -> the same shape. Out of place. `params`: the learned activation's tensors
/// (activationParameters); throws Error(InvalidArgument) when they are missing.
torch::Tensor activate(Activation a, const torch::Tensor& x,
                       const std::vector<torch::Tensor>& params = {});

/// activate() writing over x where it can (GELU, ReLU, SiLU, tanh, sigmoid), the same numbers;
/// out of place for the others and whenever x needs a gradient (the backward reads the input).
/// x must be a temporary of the caller's: the feed-forward block's up projection, whose second
/// buffer (12 MB for GPT-2 at T = 1000) was the largest of a layer's activations.
torch::Tensor activateInPlace(Activation a, torch::Tensor x,
                              const std::vector<torch::Tensor>& params = {});

}  // namespace attnscope
