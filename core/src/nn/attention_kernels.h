// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>

/// The three inner loops of blocked attention on plain float pointers, written for AVX-512:
/// q·kᵀ, one softmax row, and weights·v.
///
/// Why not the BLAS: attention's products are thin (k = head_dim = 64 in q·kᵀ, n = 64 in
/// weights·v) and come 12 × 4 blocks a layer. OpenBLAS repacks both operands on every call and
/// runs them at 40–55 GFLOP/s on this machine's cores, against ~190 for the projections. Keys are
/// packed here once per head, values need no packing (a row of v is already the 64 contiguous
/// floats a register tile wants), and the softmax runs on the block while it is in cache.
///
/// Callers check `available()` first (the CPU has AVX-512F) and otherwise use ATen.
namespace attnscope::attention_kernels {

/// Keys per packed panel: two 16-float registers.
constexpr int64_t kPanel = 32;

/// True when this CPU runs the kernels (AVX-512F).
bool available();

/// Floats `packKeys` writes for n keys of width d: whole panels, zero-padded.
std::size_t packedKeysSize(int64_t n, int64_t d);

/// Packs k [n, d] (row stride `rowStride`, columns contiguous) into panels of kPanel keys:
/// out[p·d·kPanel + c·kPanel + j] = k[p·kPanel + j][c], 0 past the last key.
void packKeys(const float* k, int64_t rowStride, int64_t n, int64_t d, float* out);

/// dst [n, d] contiguous = src [n, d] with row stride `rowStride`, columns contiguous. Operands
/// are copied into contiguous rows before the products: a head's rows inside a fused projection
/// sit 9 KB apart (GPT-2), a stride that maps 128 rows onto a quarter of L1's sets, so a block of
/// them does not stay in L1 however small.
void copyRows(const float* src, int64_t rowStride, int64_t n, int64_t d, float* dst);

/// s[i][j − p0·kPanel] = scale · Σ_c q[i][c] · k[j][c] for i < m and the keys j of panels
/// [p0, p1) of `packed` (from packKeys with the same d). q: [m, d], row stride qStride, columns
/// contiguous. s: row stride sStride ≥ (p1 − p0)·kPanel; every column of those panels is written.
void queryKeys(const float* q, int64_t qStride, int64_t m, int64_t d, const float* packed,
               int64_t p0, int64_t p1, float scale, float* s, int64_t sStride);

/// x[j] += bias[j] + mask[j] (in that order, as ATen adds them; either may be null), j < n.
void addRow(float* x, const float* bias, const float* mask, int64_t n);

/// x[j] ← exp(x[j] − max x) / Σ exp(x − max x), j < n; exactly 0 where x[j] = −inf. n ≥ 1 and
/// at least one x finite (the caller's mask guarantees it). The same weights also go to `out`
/// unless it is null, with streaming stores where aligned (call streamFence before another
/// thread reads them).
void softmaxRow(float* x, int64_t n, float* out);

/// out[j] = value, j < n, with streaming stores where aligned.
void streamFill(float* out, int64_t n, float value);

/// Orders this thread's streaming stores before its later stores (a job's end).
void streamFence();

/// o[i][c] = Σ_{j<n} p[i][j] · v[j][c] for i < m, c < dv. dv must be a multiple of 16. p: row
/// stride pStride; v: [n, dv], row stride vStride, columns contiguous; o: row stride oStride.
void weightsValues(const float* p, int64_t pStride, int64_t m, int64_t n, const float* v,
                   int64_t vStride, int64_t dv, float* o, int64_t oStride);

}  // namespace attnscope::attention_kernels
