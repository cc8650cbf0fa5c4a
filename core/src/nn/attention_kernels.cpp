// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's own AVX-512 header trips it (_mm512_undefined_ps, GCC bug 105593) once inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define ATTNSCOPE_X86 1
// Per function, not for the file: the rest of the program runs on CPUs without AVX-512.
#define ATTNSCOPE_AVX512 __attribute__((target("avx512f,fma")))
#else
#define ATTNSCOPE_X86 0
#endif

namespace attnscope::attention_kernels {

bool available() {
#if ATTNSCOPE_X86
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

std::size_t packedKeysSize(int64_t n, int64_t d) {
  return static_cast<std::size_t>((n + kPanel - 1) / kPanel * kPanel * d);
}

void packKeys(const float* k, int64_t rowStride, int64_t n, int64_t d, float* out) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = out + p * d * kPanel;
    const int64_t keys = std::min(kPanel, n - p * kPanel);
    if (keys < kPanel) std::memset(panel, 0, sizeof(float) * static_cast<std::size_t>(d * kPanel));
    for (int64_t j = 0; j < keys; ++j) {
      const float* row = k + (p * kPanel + j) * rowStride;
      for (int64_t c = 0; c < d; ++c) panel[c * kPanel + j] = row[c];
    }
  }
}

void copyRows(const float* src, int64_t rowStride, int64_t n, int64_t d, float* dst) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * d, src + i * rowStride, sizeof(float) * static_cast<std::size_t>(d));
}

namespace {

#if ATTNSCOPE_X86

/// Calls f(std::integral_constant<int, n>{}) for a runtime n in [1, Max]: a leftover tile's row or
/// register count as the template argument its register arrays need.
template <int Max, class F>
void withCount(int64_t n, F&& f) {
  if constexpr (Max > 0) {
    if (n == Max)
      f(std::integral_constant<int, Max>{});
    else
      withCount<Max - 1>(n, f);
  }
}

// q·kᵀ register tile: MR query rows × one panel (32 keys), 2·MR accumulators.
template <int MR>
ATTNSCOPE_AVX512 void queryKeysTile(const float* q, int64_t qStride, int64_t d, const float* panel,
                                    float scale, float* s, int64_t sStride) {
  __m512 acc[MR][2];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t c = 0; c < d; ++c) {
    const __m512 k0 = _mm512_loadu_ps(panel + c * kPanel);
    const __m512 k1 = _mm512_loadu_ps(panel + c * kPanel + 16);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 qv = _mm512_set1_ps(q[r * qStride + c]);
      acc[r][0] = _mm512_fmadd_ps(qv, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(qv, k1, acc[r][1]);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(s + r * sStride, _mm512_mul_ps(acc[r][0], sc));
    _mm512_storeu_ps(s + r * sStride + 16, _mm512_mul_ps(acc[r][1], sc));
  }
}

// 12 rows: 24 accumulators, two key registers and a broadcast of the 32 the CPU has.
constexpr int kQueryRows = 12;

// Panels outer, row tiles inner: one 8 KB key panel and the caller's block of query rows stay in
// L1 while the panel's scores are written.
ATTNSCOPE_AVX512 void queryKeysAvx512(const float* q, int64_t qStride, int64_t m, int64_t d,
                                      const float* packed, int64_t p0, int64_t p1, float scale,
                                      float* s, int64_t sStride) {
  for (int64_t p = p0; p < p1; ++p) {
    const float* panel = packed + p * d * kPanel;
    float* out = s + (p - p0) * kPanel;
    int64_t i = 0;
    for (; i + kQueryRows <= m; i += kQueryRows)
      queryKeysTile<kQueryRows>(q + i * qStride, qStride, d, panel, scale, out + i * sStride,
                                sStride);
    withCount<kQueryRows - 1>(m - i, [&](auto rows) {
      queryKeysTile<decltype(rows)::value>(q + i * qStride, qStride, d, panel, scale,
                                           out + i * sStride, sStride);
    });
  }
}

// weights·v register tile: MR rows × NV registers of 16 value columns.
// `accumulate`: add to o instead of overwriting it (the second and later key chunks).
template <int MR, int NV>
ATTNSCOPE_AVX512 void weightsValuesTile(const float* p, int64_t pStride, int64_t n, const float* v,
                                        int64_t vStride, float* o, int64_t oStride,
                                        bool accumulate) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c)
      acc[r][c] = accumulate ? _mm512_loadu_ps(o + r * oStride + 16 * c) : _mm512_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    __m512 vv[NV];
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c) vv[c] = _mm512_loadu_ps(v + j * vStride + 16 * c);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 pv = _mm512_set1_ps(p[r * pStride + j]);
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_fmadd_ps(pv, vv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c) _mm512_storeu_ps(o + r * oStride + 16 * c, acc[r][c]);
}

// 6 rows × 4 registers (64 columns, one GPT-2 head): 24 accumulators.
constexpr int kValueRows = 6;

template <int MR>
ATTNSCOPE_AVX512 void weightsValuesRows(const float* p, int64_t pStride, int64_t n, const float* v,
                                        int64_t vStride, int64_t dv, float* o, int64_t oStride,
                                        bool acc) {
  int64_t c = 0;
  for (; c + 64 <= dv; c += 64)
    weightsValuesTile<MR, 4>(p, pStride, n, v + c, vStride, o + c, oStride, acc);
  withCount<3>((dv - c) / 16, [&](auto registers) {
    weightsValuesTile<MR, decltype(registers)::value>(p, pStride, n, v + c, vStride, o + c, oStride,
                                                      acc);
  });
}

// Keys per chunk of weights·v: 128 rows of a 64-wide v are 32 KB, which stay in L1 while every
// row tile of the block uses them (a whole v at T = 4096 is 1 MB and would stream from L2 for
// each tile).
constexpr int64_t kValueChunk = 128;

ATTNSCOPE_AVX512 void weightsValuesAvx512(const float* p, int64_t pStride, int64_t m, int64_t n,
                                          const float* v, int64_t vStride, int64_t dv, float* o,
                                          int64_t oStride) {
  for (int64_t j0 = 0; j0 < n; j0 += kValueChunk) {
    const int64_t keys = std::min(kValueChunk, n - j0);
    const float* vc = v + j0 * vStride;
    const bool acc = j0 > 0;
    int64_t i = 0;
    for (; i + kValueRows <= m; i += kValueRows)
      weightsValuesRows<kValueRows>(p + i * pStride + j0, pStride, keys, vc, vStride, dv,
                                    o + i * oStride, oStride, acc);
    withCount<kValueRows - 1>(m - i, [&](auto rows) {
      weightsValuesRows<decltype(rows)::value>(p + i * pStride + j0, pStride, keys, vc, vStride, dv,
                                               o + i * oStride, oStride, acc);
    });
  }
}

// exp on 16 floats: Cephes' expf (x = k·ln 2 + r, |r| ≤ ln 2 / 2, degree-7 polynomial; ≤ 2 ulp
// against the correctly rounded value), 2^k applied by scalef, which saturates to 0 and +inf
// without the exponent-field arithmetic overflowing. Inputs at or below −120 give exactly 0
// (e^−120 is below half the smallest subnormal), so a −inf mask entry weighs exactly 0. NaN stays
// NaN (max keeps its second operand when one is NaN).
ATTNSCOPE_AVX512 inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-120.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(y, k);
}

ATTNSCOPE_AVX512 inline __mmask16 tailMask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF)
                    : static_cast<__mmask16>((1u << static_cast<unsigned>(left)) - 1u);
}

ATTNSCOPE_AVX512 void addRowAvx512(float* x, const float* bias, const float* mask, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tailMask(n - j);
    __m512 v = _mm512_maskz_loadu_ps(m, x + j);
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + j));
    if (mask) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, mask + j));
    _mm512_mask_storeu_ps(x + j, m, v);
  }
}

// Floats before `out` reaches a 64-byte boundary (streaming stores need one), at most n.
inline int64_t headToAlignment(const float* out, int64_t n) {
  const auto misaligned = reinterpret_cast<std::uintptr_t>(out) & 63u;
  return std::min<int64_t>(n, static_cast<int64_t>(((64u - misaligned) & 63u) / sizeof(float)));
}

// Stores v at out[j..j+16) and x[j..j+16): x in the cache, out past it.
ATTNSCOPE_AVX512 inline void storeRow(float* x, float* out, int64_t j, __m512 v, __mmask16 m,
                                      bool whole) {
  _mm512_mask_storeu_ps(x + j, m, v);
  if (!out) return;
  if (whole)
    _mm512_stream_ps(out + j, v);
  else
    _mm512_mask_storeu_ps(out + j, m, v);
}

ATTNSCOPE_AVX512 void softmaxRowAvx512(float* x, int64_t n, float* out) {
  const __m512 negInf = _mm512_set1_ps(-INFINITY);
  __m512 mx = negInf;
  for (int64_t j = 0; j < n; j += 16)
    mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(negInf, tailMask(n - j), x + j));
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tailMask(n - j);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(negInf, m, x + j), max));
    _mm512_mask_storeu_ps(x + j, m, e);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  // Aligned whole registers of `out` are streamed: the first pass over the attention writes it,
  // so reading its lines in first (as a plain store does) would double the memory traffic.
  const int64_t head = out ? headToAlignment(out, n) : 0;
  if (head > 0) {
    const __mmask16 m = tailMask(head);
    storeRow(x, out, 0, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x), inv), m, false);
  }
  int64_t j = head;
  for (; j + 16 <= n; j += 16)
    storeRow(x, out, j, _mm512_mul_ps(_mm512_loadu_ps(x + j), inv), 0xFFFF, true);
  if (j < n) {
    const __mmask16 m = tailMask(n - j);
    storeRow(x, out, j, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), inv), m, false);
  }
}

ATTNSCOPE_AVX512 void streamFillAvx512(float* out, int64_t n, float value) {
  const __m512 v = _mm512_set1_ps(value);
  const int64_t head = headToAlignment(out, n);
  if (head > 0) _mm512_mask_storeu_ps(out, tailMask(head), v);
  int64_t j = head;
  for (; j + 16 <= n; j += 16) _mm512_stream_ps(out + j, v);
  if (j < n) _mm512_mask_storeu_ps(out + j, tailMask(n - j), v);
}

#endif  // ATTNSCOPE_X86

}  // namespace

// Each entry point has a plain-loop body for CPUs without AVX-512, so that it always computes
// what its comment says (callers still check available(): the loops are not fast).

void queryKeys(const float* q, int64_t qStride, int64_t m, int64_t d, const float* packed,
               int64_t p0, int64_t p1, float scale, float* s, int64_t sStride) {
#if ATTNSCOPE_X86
  if (available()) return queryKeysAvx512(q, qStride, m, d, packed, p0, p1, scale, s, sStride);
#endif
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = p0 * kPanel; j < p1 * kPanel; ++j) {
      const float* panel = packed + (j / kPanel) * d * kPanel + j % kPanel;
      float acc = 0;
      for (int64_t c = 0; c < d; ++c) acc += q[i * qStride + c] * panel[c * kPanel];
      s[i * sStride + j - p0 * kPanel] = acc * scale;
    }
}

void addRow(float* x, const float* bias, const float* mask, int64_t n) {
#if ATTNSCOPE_X86
  if (available()) return addRowAvx512(x, bias, mask, n);
#endif
  for (int64_t j = 0; j < n; ++j) {
    if (bias) x[j] += bias[j];
    if (mask) x[j] += mask[j];
  }
}

void softmaxRow(float* x, int64_t n, float* out) {
#if ATTNSCOPE_X86
  if (available()) return softmaxRowAvx512(x, n, out);
#endif
  const float max = *std::max_element(x, x + n);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (x[j] = std::exp(x[j] - max));
  for (int64_t j = 0; j < n; ++j) {
    x[j] /= sum;
    if (out) out[j] = x[j];
  }
}

void streamFill(float* out, int64_t n, float value) {
#if ATTNSCOPE_X86
  if (available()) return streamFillAvx512(out, n, value);
#endif
  std::fill(out, out + n, value);
}

void streamFence() {
#if ATTNSCOPE_X86
  _mm_sfence();
#endif
}

void weightsValues(const float* p, int64_t pStride, int64_t m, int64_t n, const float* v,
                   int64_t vStride, int64_t dv, float* o, int64_t oStride) {
#if ATTNSCOPE_X86
  if (available()) return weightsValuesAvx512(p, pStride, m, n, v, vStride, dv, o, oStride);
#endif
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < dv; ++c) {
      float acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += p[i * pStride + j] * v[j * vStride + c];
      o[i * oStride + c] = acc;
    }
}

}  // namespace attnscope::attention_kernels
