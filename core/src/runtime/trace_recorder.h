// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include "attnscope/shape_trace.h"

namespace attnscope {

/// Records steps into a LayerTrace (or nothing, when given none), reading each shape from the
/// tensor that was actually computed.
class TraceRecorder final {
 public:
  explicit TraceRecorder(LayerTrace* trace) : m_trace(trace) {}

  bool active() const { return m_trace != nullptr; }
  /// The index of the step recorded last, -1 when none (or when not recording).
  int last() const { return m_trace ? static_cast<int>(m_trace->steps.size()) - 1 : -1; }

  int record(const std::string& name, const std::string& op, const std::string& kind,
             const torch::Tensor& tensor, std::vector<int> inputs = {}, int head = -1) {
    if (!m_trace) return -1;
    TraceStep step{name, op, kind, {}, head, std::move(inputs)};
    step.shape.assign(tensor.sizes().begin(), tensor.sizes().end());
    return m_trace->add(std::move(step));
  }

 private:
  LayerTrace* m_trace;
};

}  // namespace attnscope
