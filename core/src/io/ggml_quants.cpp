// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/ggml_quants.h"

#include <cmath>
#include <cstring>
#include <iterator>

#include "attnscope/error.h"

// Block bytes are little-endian in the file and are read as host values.
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "attnscope's GGUF code assumes a little-endian host"
#endif

// Each value is computed with the operations of ggml's reference dequantization, in its order and
// with no fused multiply-add (this file is compiled with -ffp-contract=off), so a value equals the
// one llama.cpp's scalar code computes, bit for bit.

namespace attnscope {
namespace {

constexpr uint32_t kSuperBlock = 256;  // QK_K: the K-quants' and IQ4_XS's block

// The layouts as gguf-py's GGML_QUANT_SIZES lists them (block size, bytes per block).
constexpr struct {
  GgmlType type;
  GgmlTypeLayout layout;
} kLayouts[] = {
    {GgmlType::F32, {"F32", 1, 4, true}},
    {GgmlType::F16, {"F16", 1, 2, true}},
    {GgmlType::BF16, {"BF16", 1, 2, true}},
    {GgmlType::Q8_0, {"Q8_0", 32, 34, true}},
    {GgmlType::Q4_0, {"Q4_0", 32, 18, true}},
    {GgmlType::Q4_1, {"Q4_1", 32, 20, true}},
    {GgmlType::Q5_0, {"Q5_0", 32, 22, true}},
    {GgmlType::Q5_1, {"Q5_1", 32, 24, true}},
    {GgmlType::Q2_K, {"Q2_K", kSuperBlock, 84, true}},
    {GgmlType::Q3_K, {"Q3_K", kSuperBlock, 110, true}},
    {GgmlType::Q4_K, {"Q4_K", kSuperBlock, 144, true}},
    {GgmlType::Q5_K, {"Q5_K", kSuperBlock, 176, true}},
    {GgmlType::Q6_K, {"Q6_K", kSuperBlock, 210, true}},
    {GgmlType::IQ4_NL, {"IQ4_NL", 32, 18, true}},
    {GgmlType::IQ4_XS, {"IQ4_XS", kSuperBlock, 136, true}},
    {GgmlType::Q8_1, {"Q8_1", 32, 36, false}},
    {GgmlType::Q8_K, {"Q8_K", kSuperBlock, 292, false}},
    {GgmlType::IQ2_XXS, {"IQ2_XXS", kSuperBlock, 66, false}},
    {GgmlType::IQ2_XS, {"IQ2_XS", kSuperBlock, 74, false}},
    {GgmlType::IQ3_XXS, {"IQ3_XXS", kSuperBlock, 98, false}},
    {GgmlType::IQ1_S, {"IQ1_S", kSuperBlock, 50, false}},
    {GgmlType::IQ3_S, {"IQ3_S", kSuperBlock, 110, false}},
    {GgmlType::IQ2_S, {"IQ2_S", kSuperBlock, 82, false}},
    {GgmlType::I8, {"I8", 1, 1, false}},
    {GgmlType::I16, {"I16", 1, 2, false}},
    {GgmlType::I32, {"I32", 1, 4, false}},
    {GgmlType::I64, {"I64", 1, 8, false}},
    {GgmlType::F64, {"F64", 1, 8, false}},
    {GgmlType::IQ1_M, {"IQ1_M", kSuperBlock, 56, false}},
    {GgmlType::TQ1_0, {"TQ1_0", kSuperBlock, 54, false}},
    {GgmlType::TQ2_0, {"TQ2_0", kSuperBlock, 66, false}},
    {GgmlType::MXFP4, {"MXFP4", 32, 17, false}},
};

// IQ4_NL's and IQ4_XS's sixteen levels (ggml-common.h kvalues_iq4nl).
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

float halfAt(const uint8_t* p) {
  return halfBitsToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// Q8_0: d (f16), 32 int8.
void dequantizeQ8_0(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q4_0: d, 16 bytes of nibbles; low nibbles are values 0..15, high nibbles 16..31, offset 8.
void dequantizeQ4_0(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// Q4_1: d, m, nibbles; value = q * d + m.
void dequantizeQ4_1(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const float m = halfAt(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

uint32_t u32At(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Q5_0: d, 32 high bits (bit j for value j), nibbles; offset 16.
void dequantizeQ5_0(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const uint32_t qh = u32At(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int high0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int high1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = static_cast<float>(((qs[j] & 0x0F) | high0) - 16) * d;
    y[j + 16] = static_cast<float>(((qs[j] >> 4) | high1) - 16) * d;
  }
}

// Q5_1: d, m, high bits, nibbles; value = q * d + m.
void dequantizeQ5_1(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const float m = halfAt(b + 2);
  const uint32_t qh = u32At(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int high0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int high1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = static_cast<float>((qs[j] & 0x0F) | high0) * d + m;
    y[j + 16] = static_cast<float>((qs[j] >> 4) | high1) * d + m;
  }
}

// IQ4_NL: d, nibbles indexing the non-linear levels.
void dequantizeIq4Nl(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4Levels[qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4Levels[qs[j] >> 4]);
  }
}

// Q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit values, d, dmin.
// Each 128 values read 32 bytes four times (shifts 0, 2, 4, 6); every 16 values take the next
// scale.
void dequantizeQ2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = halfAt(b + 80);
  const float dmin = halfAt(b + 82);
  int is = 0;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0x0F);
        const float ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
      }
    }
  }
}

// Q3_K: 32 bytes of high bits, 64 bytes of 2-bit values, 12 bytes holding sixteen 6-bit scales
// (offset 32), d. A clear high bit subtracts 4.
void dequantizeQ3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* q = b + 32;
  const uint8_t* packed = b + 96;
  const float d = halfAt(b + 108);
  // Scale i: its low four bits are a nibble of bytes 0..7 (low nibbles for i < 8, high after),
  // its top two bits come from bytes 8..11, two bits per scale.
  int scales[16];
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? packed[i] & 0x0F : packed[i - 8] >> 4;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = (low | (high << 4)) - 32;
  }
  int is = 0;
  unsigned bit = 1;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, bit <<= 1) {
      for (int part = 0; part < 2; ++part) {
        const float dl = d * static_cast<float>(scales[is++]);
        for (int l = 0; l < 16; ++l) {
          const int index = 16 * part + l;
          const int value = ((q[index] >> shift) & 3) - ((hmask[index] & bit) ? 0 : 4);
          *y++ = dl * static_cast<float>(value);
        }
      }
    }
  }
}

// The K-quants' eight 6-bit scales and mins packed into 12 bytes (ggml's get_scale_min_k4).
void scaleMinK4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q4_K: d, dmin, 12 scale bytes, 128 bytes of nibbles; each 64 values are 32 low nibbles (scale
// 2k) then the same bytes' high nibbles (scale 2k + 1).
void dequantizeQ4_K(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const float dmin = halfAt(b + 2);
  const uint8_t* packed = b + 4;
  const uint8_t* q = b + 16;
  for (int is = 0; is < 8; is += 2, q += 32) {
    uint8_t sc, m;
    scaleMinK4(is, packed, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    scaleMinK4(is + 1, packed, &sc, &m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// Q5_K: Q4_K plus 32 bytes of fifth bits, two bit planes per 64 values.
void dequantizeQ5_K(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const float dmin = halfAt(b + 2);
  const uint8_t* packed = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  unsigned bit1 = 1, bit2 = 2;
  for (int is = 0; is < 8; is += 2, q += 32, bit1 <<= 2, bit2 <<= 2) {
    uint8_t sc, m;
    scaleMinK4(is, packed, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    scaleMinK4(is + 1, packed, &sc, &m);
    const float d2 = d * static_cast<float>(sc);
    const float m2 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * static_cast<float>((q[l] & 0x0F) + ((qh[l] & bit1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * static_cast<float>((q[l] >> 4) + ((qh[l] & bit2) ? 16 : 0)) - m2;
  }
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8 scales, d; offset 32.
void dequantizeQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = halfAt(b + 208);
  for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

// IQ4_XS: d, 16 bits of scale high parts, 4 bytes of scale nibbles, 128 bytes of level nibbles;
// eight 32-value groups with a 6-bit scale each (offset 32).
void dequantizeIq4Xs(const uint8_t* b, float* y) {
  const float d = halfAt(b);
  const unsigned scalesHigh = static_cast<unsigned>(b[2] | (b[3] << 8));
  const uint8_t* scalesLow = b + 4;
  const uint8_t* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
    const int ls = ((scalesLow[ib / 2] >> (4 * (ib % 2))) & 0x0F) |
                   static_cast<int>(((scalesHigh >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kIq4Levels[qs[j] & 0x0F]);
      y[j + 16] = dl * static_cast<float>(kIq4Levels[qs[j] >> 4]);
    }
  }
}

template <typename Block>
void forEachBlock(const uint8_t* src, float* dst, uint64_t count, uint32_t blockSize,
                  uint32_t blockBytes, Block block) {
  for (uint64_t i = 0; i < count / blockSize; ++i) block(src + i * blockBytes, dst + i * blockSize);
}

}  // namespace

float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exactly representable as a float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    std::memcpy(&bits, &magnitude, 4);
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf, or NaN keeping its payload
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

const GgmlTypeLayout* ggmlTypeLayout(uint32_t type) {
  for (const auto& entry : kLayouts)
    if (static_cast<uint32_t>(entry.type) == type) return &entry.layout;
  return nullptr;
}

std::string ggmlTypeName(uint32_t type) {
  const GgmlTypeLayout* layout = ggmlTypeLayout(type);
  return layout ? layout->name : "type " + std::to_string(type);
}

std::string readableGgmlTypes() {
  std::string out;
  for (const auto& entry : kLayouts)
    if (entry.layout.readable) out += (out.empty() ? "" : ", ") + std::string(entry.layout.name);
  return out;
}

void dequantizeValues(GgmlType type, const uint8_t* src, float* dst, uint64_t count) {
  const GgmlTypeLayout* layout = ggmlTypeLayout(static_cast<uint32_t>(type));
  if (!layout || !layout->readable || count % layout->blockSize != 0)
    throw Error(ErrorKind::Internal,
                "dequantizeValues: " + ggmlTypeName(static_cast<uint32_t>(type)) + " with " +
                    std::to_string(count) + " values");
  const uint32_t n = layout->blockSize;
  const uint32_t bytes = layout->blockBytes;
  switch (type) {
    case GgmlType::F32:
      if (count) std::memcpy(dst, src, count * 4);
      return;
    case GgmlType::F16:
      for (uint64_t i = 0; i < count; ++i) dst[i] = halfAt(src + 2 * i);
      return;
    case GgmlType::BF16:
      for (uint64_t i = 0; i < count; ++i) {
        const uint32_t bits = static_cast<uint32_t>(src[2 * i] | (src[2 * i + 1] << 8)) << 16;
        std::memcpy(dst + i, &bits, 4);
      }
      return;
    case GgmlType::Q8_0:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ8_0);
    case GgmlType::Q4_0:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ4_0);
    case GgmlType::Q4_1:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ4_1);
    case GgmlType::Q5_0:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ5_0);
    case GgmlType::Q5_1:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ5_1);
    case GgmlType::Q2_K:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ2_K);
    case GgmlType::Q3_K:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ3_K);
    case GgmlType::Q4_K:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ4_K);
    case GgmlType::Q5_K:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ5_K);
    case GgmlType::Q6_K:
      return forEachBlock(src, dst, count, n, bytes, dequantizeQ6_K);
    case GgmlType::IQ4_NL:
      return forEachBlock(src, dst, count, n, bytes, dequantizeIq4Nl);
    case GgmlType::IQ4_XS:
      return forEachBlock(src, dst, count, n, bytes, dequantizeIq4Xs);
    default:
      break;
  }
  throw Error(ErrorKind::Internal, "dequantizeValues: no code for " + std::string(layout->name));
}

}  // namespace attnscope
