// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/float_tensor.h"

namespace attnscope {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };
const char* toString(DType d);  // the spec's spelling: "F32", "BF16", ...
std::size_t byteSize(DType d);

/// One entry of a safetensors header. Offsets are relative to the start of the data section.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// A name and float32 data, for writing.
struct NamedTensor {
  std::string name;
  FloatTensor tensor;
};

/// A validated, read-only safetensors file (https://github.com/huggingface/safetensors format:
/// 8-byte little-endian header length, JSON header, contiguous little-endian data).
/// Everything is checked before anything is used: header bounds and size (<= 100 MB), UTF-8 and
/// JSON, known dtypes, shape x dtype == byte span, offsets contiguous without gaps or overlaps,
/// no trailing bytes. Loading never runs code.
class SafetensorsFile {
 public:
  /// Throws Error(Io) when unreadable, Error(Format) naming the problem when malformed.
  static SafetensorsFile open(const std::string& path);
  /// The same checks on bytes in memory (tests, fuzzing).
  static SafetensorsFile fromBytes(std::string bytes);

  const std::map<std::string, std::string>& metadata() const;
  const std::vector<TensorInfo>& tensors() const;  // in file order
  const TensorInfo* find(const std::string& name) const;
  /// Converts F32/F16/BF16/F64 to float32. Throws Error(Format) for a missing name (naming it) or
  /// a non-float dtype.
  FloatTensor readFloat(const std::string& name) const;
  /// Raw bytes of one tensor (little-endian, as stored).
  const uint8_t* rawData(const TensorInfo& info) const;

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

 private:
  SafetensorsFile();
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

/// Serialises tensors as F32 in the given order, with optional "__metadata__" string pairs.
std::string safetensorsBytes(const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {});
/// Writes through OutputFile (atomic for files, direct for devices). Throws Error(Io).
void writeSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace attnscope
