// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnscope {

/// How one packed weight's bytes hold a float32 matrix [rows, columns]: `rowBytes` bytes a row of
/// whole quantization blocks (a GGUF tensor's layout), widened by `unpack`.
struct PackedWeightLayout {
  int64_t rows = 0, columns = 0;
  int64_t rowBytes = 0;
  /// > 0: the stored rows are permuted for rotary pairs within heads of rows / permutedHeads rows
  /// (llama's converter stores head h's rows [2, D/2] as [D/2, 2]): float32 row h·D + j·D/2 + i
  /// is stored row h·D + 2i + j.
  int64_t permutedHeads = 0;
  /// > 0: a fused query_key_value of this many heads, stored as Q, K, V (row_order.h: qkvHeads)
  /// where the float32 matrix interleaves them per head (GPT-NeoX's and BLOOM's layout).
  int64_t qkvHeads = 0;
  /// The parameter is the float32 matrix transposed, [columns, rows]: GPT-2's Conv1D weights,
  /// [in, out], which the file stores as [out, in] rows. unpackWeight returns it transposed;
  /// linearForward on it computes x @ weight, Conv1D's product.
  bool transposed = false;
  std::string typeName;  // "Q4_K", for the model info
  /// Widens `count` values (whole blocks, `columns` of them a row) from src into dst; the same
  /// floats as widening the whole tensor at once, so packed and widened models compute alike.
  std::function<void(const uint8_t* src, float* dst, int64_t count)> unpack;

  /// The stored row that holds float32 row r.
  int64_t storedRow(int64_t r) const;
};

/// Weights kept as their file's quantized blocks, widened to float32 only while a layer uses
/// them: a Q4_K_M model is ~4.5 bits a weight, and widened whole it would need 7× that.
///
/// Each packed weight is a uint8 tensor [rows, rowBytes] over the file's bytes (memory-mapped
/// pages: no copy), registered with its layout by where its bytes are, so the layers' shared code
/// (linearForward, EmbeddingTable, computeWeight) recognises it from the tensor alone. The
/// registrations, and whatever owns the bytes (`storage`: the open file), live as long as this
/// object; a model keeps it for as long as its modules hold the tensors.
class PackedWeights final {
 public:
  explicit PackedWeights(std::shared_ptr<const void> storage) : m_storage(std::move(storage)) {}
  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  /// Registers `data` (rows × rowBytes bytes, owned by the storage) under a checkpoint name.
  void add(const std::string& name, const uint8_t* data, PackedWeightLayout layout);
  /// The packed tensor [rows, rowBytes] uint8 of a checkpoint name, or nullptr.
  const torch::Tensor* find(const std::string& name) const;
  const std::map<std::string, torch::Tensor>& tensors() const { return m_tensors; }

 private:
  std::shared_ptr<const void> m_storage;
  std::map<std::string, torch::Tensor> m_tensors;
};

/// The layout of a packed weight, or nullptr for any other tensor.
std::shared_ptr<const PackedWeightLayout> packedLayout(const torch::Tensor& w);

/// Float32 rows [first, first + count) of a packed weight into out[0, count · columns), on the
/// intra-op threads.
void unpackRows(const torch::Tensor& w, const PackedWeightLayout& layout, int64_t first,
                int64_t count, float* out);

/// The whole weight as float32 [rows, columns] (a new tensor), or its transpose [columns, rows]
/// (a view of one) for a transposed layout: the parameter's shape either way.
torch::Tensor unpackWeight(const torch::Tensor& w, const PackedWeightLayout& layout);

/// The rows `ids` names (int64, any shape) as float32 [..., columns]: only those rows are
/// widened (an embedding lookup).
torch::Tensor unpackEmbedding(const torch::Tensor& w, const PackedWeightLayout& layout,
                              const torch::Tensor& ids);

/// A weight as float32 whatever it holds: packed (widened whole), F16/BF16 (to()), float32 (as is).
torch::Tensor floatWeight(const torch::Tensor& w);

}  // namespace attnscope
