// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/activation.h"

#include <cmath>
#include <map>

#include "attnscope/error.h"

namespace attnscope {
namespace {

const std::map<std::string, Activation>& names() {
  // transformers/activations.py: gelu_new, gelu_pytorch_tanh and gelu_accurate all compute the
  // tanh approximation (gelu_accurate with a slightly different constant, within 1e-7 of it).
  static const std::map<std::string, Activation> table = {
      {"gelu", Activation::Gelu},
      {"gelu_python", Activation::Gelu},
      {"gelu_new", Activation::GeluTanh},
      {"gelu_pytorch_tanh", Activation::GeluTanh},
      {"gelu_fast", Activation::GeluFast},
      {"quick_gelu", Activation::QuickGelu},
      {"relu", Activation::Relu},
      {"relu2", Activation::Relu2},
      {"silu", Activation::Silu},
      {"swish", Activation::Silu},
      {"tanh", Activation::Tanh},
      {"sigmoid", Activation::Sigmoid},
      {"linear", Activation::Identity},
      {"gelu_accurate", Activation::GeluTanh},
      {"gelu_10", Activation::Gelu10},
      {"laplace", Activation::Laplace},
      {"leaky_relu", Activation::LeakyRelu},
      {"mish", Activation::Mish},
      {"relu6", Activation::Relu6},
      {"gelu_python_tanh", Activation::GeluTanh},
      {"hardswish", Activation::Hardswish},
      {"sqrtsoftplus", Activation::SqrtSoftplus},
      {"prelu", Activation::Prelu},
      {"xielu", Activation::Xielu},
  };
  return table;
}

}  // namespace

Activation parseActivation(const std::string& name, const std::string& what) {
  const auto it = names().find(name);
  if (it != names().end()) return it->second;
  std::string supported;
  for (const std::string& n : activationNames()) supported += (supported.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::Format,
              what + " \"" + name + "\" is not supported; supported: " + supported);
}

std::vector<std::string> activationNames() {
  std::vector<std::string> out;
  for (const auto& [name, a] : names()) out.push_back(name);
  return out;
}

std::string activationExpression(Activation a) {
  switch (a) {
    case Activation::Gelu:
      return "F.gelu(h)";
    case Activation::GeluTanh:
      return "F.gelu(h, approximate='tanh')";
    case Activation::GeluFast:
      return "0.5 * h * (1 + tanh(0.7978845608 * h * (1 + 0.044715 * h * h)))";
    case Activation::QuickGelu:
      return "h * torch.sigmoid(1.702 * h)";
    case Activation::Relu:
      return "F.relu(h)";
    case Activation::Relu2:
      return "F.relu(h) ** 2";
    case Activation::Silu:
      return "F.silu(h)";
    case Activation::Tanh:
      return "torch.tanh(h)";
    case Activation::Sigmoid:
      return "torch.sigmoid(h)";
    case Activation::Identity:
      return "h";
    case Activation::Gelu10:
      return "torch.clip(F.gelu(h), -10, 10)";
    case Activation::Laplace:
      return "0.5 * (1 + torch.erf((h - 0.707107) / (0.282095 * math.sqrt(2))))";
    case Activation::LeakyRelu:
      return "F.leaky_relu(h)";
    case Activation::Mish:
      return "F.mish(h)";
    case Activation::Relu6:
      return "F.relu6(h)";
    case Activation::Hardswish:
      return "F.hardswish(h)";
    case Activation::SqrtSoftplus:
      return "F.softplus(h).sqrt()";
    case Activation::Prelu:
      return "self.act(h)  # nn.PReLU";
    case Activation::Xielu:
      return "self.act(h)  # xIELU";
  }
  return "h";
}

std::vector<std::pair<std::string, std::vector<int64_t>>> activationParameters(Activation a) {
  if (a == Activation::Prelu) return {{"weight", {1}}};
  if (a == Activation::Xielu)
    return {{"alpha_p", {1}}, {"alpha_n", {1}}, {"beta", {}}, {"eps", {}}};
  return {};
}

LearnedActivationImpl::LearnedActivationImpl(Activation a) {
  for (const auto& [name, shape] : activationParameters(a))
    parameters.push_back(register_parameter(name, torch::empty(shape), /*requires_grad=*/false));
}

torch::Tensor activate(Activation a, const torch::Tensor& x,
                       const std::vector<torch::Tensor>& params) {
  if (params.size() < activationParameters(a).size())
    throw Error(ErrorKind::InvalidArgument, activationExpression(a) + " needs its learned tensors");
  // Weights may be kept as BF16/F16; the activation computes in the input's dtype.
  const auto param = [&](std::size_t i) { return params[i].to(x.dtype()); };
  switch (a) {
    case Activation::Hardswish:
      return x * torch::clamp(x + 3.0, 0.0, 6.0) / 6.0;
    case Activation::SqrtSoftplus:
      return torch::sqrt(torch::softplus(x));
    case Activation::Prelu:
      return torch::prelu(x, param(0));
    case Activation::Xielu: {
      const torch::Tensor alphaP = torch::softplus(param(0)), beta = param(2);
      const torch::Tensor alphaN = beta + torch::softplus(param(1));
      return torch::where(x > 0, alphaP * x * x + beta * x,
                          (torch::expm1(torch::minimum(x, param(3))) - x) * alphaN + beta * x);
    }
    case Activation::Gelu:
      return torch::gelu(x);
    case Activation::GeluTanh:
      return torch::gelu(x, "tanh");
    case Activation::GeluFast:
      return 0.5 * x * (1.0 + torch::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
    case Activation::QuickGelu:
      return x * torch::sigmoid(1.702 * x);
    case Activation::Relu:
      return torch::relu(x);
    case Activation::Relu2:
      return torch::relu(x).square();
    case Activation::Silu:
      return torch::silu(x);
    case Activation::Tanh:
      return torch::tanh(x);
    case Activation::Sigmoid:
      return torch::sigmoid(x);
    case Activation::Identity:
      return x;
    case Activation::Gelu10:
      return torch::clamp(torch::gelu(x), -10.0, 10.0);
    case Activation::Laplace:
      return 0.5 * (1.0 + torch::erf((x - 0.707107) / (0.282095 * std::sqrt(2.0))));
    case Activation::LeakyRelu:
      return torch::leaky_relu(x, 0.01);
    case Activation::Mish:
      return x * torch::tanh(torch::softplus(x));
    case Activation::Relu6:
      return torch::clamp(x, 0.0, 6.0);
  }
  return x;
}

torch::Tensor activateInPlace(Activation a, torch::Tensor x,
                              const std::vector<torch::Tensor>& params) {
  if (torch::GradMode::is_enabled() && x.requires_grad()) return activate(a, x, params);
  switch (a) {
    case Activation::Gelu:
      return at::gelu_(x);
    case Activation::GeluTanh:
      return at::gelu_(x, "tanh");
    case Activation::Relu:
      return x.relu_();
    case Activation::Silu:
      return at::silu_(x);
    case Activation::Tanh:
      return x.tanh_();
    case Activation::Sigmoid:
      return x.sigmoid_();
    default:
      return activate(a, x, params);
  }
}

}  // namespace attnscope
