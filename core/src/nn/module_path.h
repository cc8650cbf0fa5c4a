// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>

namespace attnscope {

/// The container module at a dotted path below root ("attention.self"), created empty on the way
/// where missing. "" is root itself.
inline torch::nn::Module& containerAt(torch::nn::Module& root, const std::string& path) {
  torch::nn::Module* at = &root;
  std::size_t begin = 0;
  while (begin < path.size()) {
    std::size_t dot = path.find('.', begin);
    if (dot == std::string::npos) dot = path.size();
    const std::string name = path.substr(begin, dot - begin);
    const auto children = at->named_children();
    if (const auto* found = children.find(name)) {
      at = found->get();
    } else {
      at = at->register_module(name, std::make_shared<torch::nn::Module>()).get();
    }
    begin = dot + 1;
  }
  return *at;
}

/// Registers `child` under a dotted Python path ("attention.self.query"), so a family's modules
/// carry the exact state-dict names of its checkpoints without one C++ class per Python
/// container. Returns the child.
template <class Holder>
Holder addModule(torch::nn::Module& root, const std::string& path, Holder child) {
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos) return root.register_module(path, child);
  return containerAt(root, path.substr(0, dot)).register_module(path.substr(dot + 1), child);
}

/// Registers a bare parameter under a dotted path ("cls.predictions.bias").
inline torch::Tensor addParameter(torch::nn::Module& root, const std::string& path,
                                  torch::Tensor value) {
  const std::size_t dot = path.rfind('.');
  torch::nn::Module& parent =
      dot == std::string::npos ? root : containerAt(root, path.substr(0, dot));
  return parent.register_parameter(path.substr(dot == std::string::npos ? 0 : dot + 1), value,
                                   /*requires_grad=*/false);
}

}  // namespace attnscope
