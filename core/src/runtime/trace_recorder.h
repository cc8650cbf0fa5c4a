// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

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
    // A weight dequantized for a product feeds the first step after it that is the product's
    // output (its last dimension the weight's rows): q, k and v each take their own.
    for (auto it = m_dequantized.begin(); it != m_dequantized.end(); ++it) {
      if (step.shape.empty() || step.shape.back() != it->second) continue;
      step.inputs.push_back(it->first);
      m_dequantized.erase(it);
      break;
    }
    return m_trace->add(std::move(step));
  }

  /// A weight kept as a file's quantized blocks (a GGUF matrix) widened to float32 for one
  /// product: a "dequantize" step [rows, columns] named after its type, where it happens.
  void recordDequantize(const std::string& type, int64_t rows, int64_t columns) {
    if (!m_trace) return;
    TraceStep step{"dequantize " + type,
                   "dequantize(" + type + " blocks) -> float32, a block of rows at a time",
                   "dequantize",
                   {rows, columns},
                   -1,
                   {}};
    m_dequantized.emplace_back(m_trace->add(std::move(step)), rows);
  }

  /// The recorder of the layer running on this thread, set by a Scope (LayerStack::run), or
  /// nullptr: the shared products (linearForward) record their dequantize steps into it without
  /// every family passing it down.
  static TraceRecorder* current() { return currentSlot(); }

  /// Makes a recorder current() on this thread while it lives.
  class Scope final {
   public:
    explicit Scope(TraceRecorder& rec) : m_previous(currentSlot()) { currentSlot() = &rec; }
    ~Scope() { currentSlot() = m_previous; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    TraceRecorder* m_previous;
  };

 private:
  static TraceRecorder*& currentSlot() {
    thread_local TraceRecorder* rec = nullptr;
    return rec;
  }

  LayerTrace* m_trace;
  std::vector<std::pair<int, int64_t>> m_dequantized;  // {step, rows} not yet used by a step
};

}  // namespace attnscope
