// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/float_tensor.h"
#include "io/ggml_quants.h"

namespace attnscope {

/// GGUF metadata value types (gguf.h's gguf_type).
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* toString(GgufValueType type);  // "u32", "string", "array", ...

/// One metadata value: a number, a bool, a string, or an array of one element type (arrays of
/// arrays included). Numeric arrays keep the file's little-endian bytes (a 150,000-entry score
/// array costs its file size, not eight times it); the accessors convert.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  GgufValueType elementType = GgufValueType::U8;  // arrays only
  uint64_t count = 0;                             // arrays only: elements
  std::string raw;                   // a number or bool, or a numeric array's elements, as stored
  std::vector<std::string> strings;  // a string (one), or a string array's elements
  std::vector<GgufValue> arrays;     // an array of arrays' elements

  bool isArray() const { return type == GgufValueType::Array; }
  /// Integer types and bool as an integer; nullopt for anything else, or a u64 above 2^63 - 1.
  std::optional<int64_t> integer() const;
  /// Any numeric type (integers exactly up to 2^53) as a double; nullopt otherwise.
  std::optional<double> number() const;
  const std::string* string() const;  // nullptr unless a string
  /// Element i of a numeric (or bool) array, as integer() / number() would give it.
  std::optional<int64_t> integerAt(uint64_t i) const;
  std::optional<double> numberAt(uint64_t i) const;
};

/// One tensor info. dims are ggml's order, fastest-varying first ([columns, rows, ...]); shape()
/// is the row-major order Hugging Face names ([rows, columns]).
struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ne[0], ne[1], ... (1 to 4 of them)
  uint32_t type = 0;           // a ggml type id (GgmlType), validated to be known
  uint64_t offset = 0;         // from the start of the data section, a multiple of the alignment
  uint64_t bytes = 0;          // its span in the data section
  std::vector<int64_t> shape() const;
  uint64_t columns() const { return dims.empty() ? 1 : dims[0]; }
  uint64_t rows() const;  // every dimension but the first, multiplied
};

/// A validated, read-only GGUF file (llama.cpp's format: "GGUF", version 1, 2 or 3, metadata
/// key/values, tensor infos, an aligned data section), little-endian only.
/// Every count, length, dimension and offset is checked against the file's size before anything
/// is allocated; tensors must be of known types, whole blocks per row, aligned, inside the data
/// section and disjoint. Large files are memory-mapped; the tensor bytes are read only when a
/// tensor is dequantized.
class GgufFile {
 public:
  /// Throws Error(Io) when unreadable, Error(Format) naming the problem (and the path).
  static GgufFile open(const std::string& path);
  /// The same checks on bytes in memory (tests, fuzzing).
  static GgufFile fromBytes(std::string bytes);
  /// Whether the first four bytes are GGUF's magic (a file named anything: Ollama blobs,
  /// model.bin). False when unreadable.
  static bool hasMagic(const std::string& path);

  uint32_t version() const;
  uint64_t alignment() const;
  const std::map<std::string, GgufValue>& metadata() const;
  const GgufValue* find(const std::string& key) const;
  const std::vector<GgufTensorInfo>& tensors() const;  // in file order
  const GgufTensorInfo* findTensor(const std::string& name) const;
  /// The bytes of a tensor (little-endian blocks, as stored).
  const uint8_t* tensorData(const GgufTensorInfo& info) const;

  /// Dequantizes rows [firstRow, firstRow + rowCount) of a tensor (rows as in rows()) into
  /// out[0, rowCount * columns). Throws Error(Format) naming the tensor and its type when the type
  /// cannot be read ("tensor blk.3.attn_q.weight is IQ2_XXS, which attnscope cannot read yet;
  /// supported: ...") and Error(InvalidArgument) for rows outside the tensor.
  void readRows(const GgufTensorInfo& info, uint64_t firstRow, uint64_t rowCount, float* out) const;
  /// The whole tensor as float32 in shape(). Throws as readRows, and Error(Format) for a missing
  /// name.
  FloatTensor readFloat(const std::string& name) const;

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

 private:
  GgufFile();
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace attnscope
