// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace attnscope {

/// The ggml tensor types a GGUF file can name (ggml.h's ggml_type values; gaps are types ggml
/// removed). Only some can be dequantized here: see ggmlTypeReadable.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

/// How a type stores values: blocks of blockSize values in blockBytes bytes each (1 and the
/// element size for plain types). A row's length must be a multiple of blockSize.
struct GgmlTypeLayout {
  const char* name;  // ggml's spelling: "Q4_K"
  uint32_t blockSize;
  uint32_t blockBytes;
  bool readable;  // dequantizeValues accepts it
};

/// The layout of a type id read from a file, or nullptr for an id ggml never had (or removed).
const GgmlTypeLayout* ggmlTypeLayout(uint32_t type);
/// "Q4_K", or "type 99" for an unknown id.
std::string ggmlTypeName(uint32_t type);
/// The readable types, for messages: "F32, F16, BF16, Q8_0, ...".
std::string readableGgmlTypes();

/// IEEE half to float, exactly (every half is a float).
float halfBitsToFloat(uint16_t bits);

/// Widens `count` values of a readable type from `src` (count / blockSize whole blocks, as laid
/// out in the file) into dst[0, count), computing each value as ggml's reference dequantization
/// does, operation for operation, so the floats are the same. `count` must be a multiple of the
/// block size and the type readable (callers check both; violations throw Error(Internal)).
void dequantizeValues(GgmlType type, const uint8_t* src, float* dst, uint64_t count);

}  // namespace attnscope
