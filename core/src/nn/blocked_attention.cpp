// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/blocked_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attnscope/error.h"
#include "nn/attention_kernels.h"
#include "runtime/cancel_scope.h"
#include "runtime/flush_denormals.h"

namespace attnscope {
namespace {

/// A strided 2-D matrix inside a tensor's storage: no ownership, no dispatcher call to make.
struct Matrix {
  float* data = nullptr;
  int64_t rowStride = 0, colStride = 1;

  /// rows × cols from (row, col) as a tensor viewing the same memory.
  torch::Tensor view(int64_t row, int64_t rows, int64_t col, int64_t cols) const {
    return torch::from_blob(data + row * rowStride + col * colStride, {rows, cols},
                            {rowStride, colStride}, torch::kFloat);
  }
};

/// Element offsets of each of the N leading-axis indices of `t` (sizes `lead`), row-major.
std::vector<int64_t> leadingOffsets(const torch::Tensor& t, at::IntArrayRef lead) {
  int64_t n = 1;
  for (int64_t s : lead) n *= s;
  std::vector<int64_t> out(static_cast<std::size_t>(n), 0);
  const auto strides = t.strides();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, offset = 0;
    for (int64_t d = static_cast<int64_t>(lead.size()) - 1; d >= 0; --d) {
      offset += (rest % lead[static_cast<std::size_t>(d)]) * strides[static_cast<std::size_t>(d)];
      rest /= lead[static_cast<std::size_t>(d)];
    }
    out[static_cast<std::size_t>(i)] = offset;
  }
  return out;
}

/// The first and one-past-last key each query row can see (a finite mask entry). False when a row
/// sees none: its softmax is NaN, which only the step-by-step path reproduces.
bool visibleKeys(const float* mask, int64_t rowStride, int64_t Tq, int64_t Tk,
                 std::vector<int32_t>& first, std::vector<int32_t>& end) {
  first.assign(static_cast<std::size_t>(Tq), 0);
  end.assign(static_cast<std::size_t>(Tq), 0);
  for (int64_t i = 0; i < Tq; ++i) {
    if (i > 0 && rowStride == 0) {
      first[static_cast<std::size_t>(i)] = first[0];
      end[static_cast<std::size_t>(i)] = end[0];
      continue;
    }
    const float* row = mask + i * rowStride;
    int64_t a = 0, b = Tk;
    while (a < Tk && std::isinf(row[a]) && row[a] < 0) ++a;
    if (a == Tk) return false;
    while (b > a && std::isinf(row[b - 1]) && row[b - 1] < 0) --b;
    first[static_cast<std::size_t>(i)] = static_cast<int32_t>(a);
    end[static_cast<std::size_t>(i)] = static_cast<int32_t>(b);
  }
  return true;
}

/// An additive mask or bias expanded to [lead..., Tq, Tk]: usable when its rows are contiguous.
bool expandable(const torch::Tensor& t, const std::vector<int64_t>& full) {
  if (!t.defined()) return true;
  if (t.device().type() != torch::kCPU || t.scalar_type() != torch::kFloat) return false;
  if (t.dim() > static_cast<int64_t>(full.size())) return false;
  for (int64_t d = 1; d <= t.dim(); ++d) {
    const int64_t have = t.size(-d), want = full[full.size() - static_cast<std::size_t>(d)];
    if (have != 1 && have != want) return false;
  }
  const torch::Tensor e = t.expand(full);
  return e.size(-1) == 1 || e.stride(-1) == 1;
}

/// x[j] = cap·tanh(x[j] / cap), j < n, in the order of operations transformers uses.
void capRow(float* x, int64_t n, float cap) {
  for (int64_t j = 0; j < n; ++j) x[j] = std::tanh(x[j] / cap) * cap;
}

/// log Σ_j exp(x[j]) of a row of n finite-or-−inf scores with at least one finite one, summed in
/// double so that the normaliser is as exact as the float32 weights it reproduces.
float logSumExp(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) max = std::max(max, x[j]);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(x[j]) - max);
  return static_cast<float>(max + std::log(sum));
}

/// Query rows per block. Measured (one thread, GPT-2 at T = 1000 and the toy layer at T = 4096):
/// rows enough for q·kᵀ (k = 64, a thin product) to run near the GEMM rate matter more than
/// keeping the block's scores in L2. 32 rows: 1893 / 1769 ms, 128: 1880 / 1273, 256: 1866 / 1184,
/// 1024: 2091 / 1147 (bigger blocks skip less of a causal mask).
///
/// The AVX-512 kernels pack a head's keys once, so small blocks cost them nothing, and 48 rows
/// keep a block's scores in L2 up to T = 4096 (768 KB). GPT-2's attention at T = 1000 (causal) /
/// the toy layer's at T = 4096, one thread, min of 6: 48 rows 21 / 515 ms, 60: 23 / 555,
/// 96: 22 / 537, 256: 31 / 770.
int64_t rowsPerBlock(int64_t Tq, bool kernels) { return std::min<int64_t>(Tq, kernels ? 48 : 256); }

}  // namespace

// Long (~180 lines) on purpose: one pass per block of query rows keeps every temporary of the block
// in cache, and its dozen shared locals (block bounds, visible keys, buffers, kernel choice) would
// otherwise be passed between pieces that only make sense in this order.
std::optional<BlockedAttention> blockedAttention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double scale,
    const torch::Tensor& bias, const AttentionMask& maskIn, const torch::Tensor& attentionOut,
    const torch::Tensor& scoresOut, bool wantScores, double softcap,
    const torch::Tensor& rowLogSumExpOut) {
  for (const torch::Tensor* t : {&q, &k, &v}) {
    if (t->device().type() != torch::kCPU || t->scalar_type() != torch::kFloat || t->dim() < 2)
      return std::nullopt;
    if (torch::GradMode::is_enabled() && t->requires_grad()) return std::nullopt;
  }
  const int64_t dims = q.dim();
  if (k.dim() != dims || v.dim() != dims) return std::nullopt;
  const at::IntArrayRef lead = q.sizes().slice(0, static_cast<std::size_t>(dims - 2));
  if (k.sizes().slice(0, lead.size()) != lead || v.sizes().slice(0, lead.size()) != lead)
    return std::nullopt;
  const int64_t Tq = q.size(-2), Tk = k.size(-2), hd = q.size(-1), hdv = v.size(-1);
  if (v.size(-2) != Tk || k.size(-1) != hd || Tq == 0 || Tk == 0) return std::nullopt;
  std::vector<int64_t> full(lead.begin(), lead.end());
  full.push_back(Tq);
  full.push_back(Tk);
  // A mask of runs ([batch or 1, 1, Tq, Tk]) over [..., items, heads] leading axes is read as
  // runs: no [Tq, Tk] tensor at all. Any other mask is added as a tensor.
  const AttentionMask::Ranges* const runs =
      maskIn.ranges() && lead.size() >= 2 && maskIn.ranges()->queries == Tq &&
              maskIn.ranges()->keys == Tk &&
              (maskIn.ranges()->items == 1 || maskIn.ranges()->items == lead[lead.size() - 2])
          ? maskIn.ranges()
          : nullptr;
  const torch::Tensor mask = runs ? torch::Tensor() : maskIn.dense();
  if (!expandable(mask, full) || !expandable(bias, full)) return std::nullopt;
  if (rowLogSumExpOut.defined() &&
      (rowLogSumExpOut.sizes() != at::IntArrayRef(full).slice(0, full.size() - 1) ||
       !rowLogSumExpOut.is_contiguous() || rowLogSumExpOut.scalar_type() != torch::kFloat ||
       !rowLogSumExpOut.device().is_cpu()))
    return std::nullopt;
  for (const torch::Tensor* out : {&attentionOut, &scoresOut}) {
    // Rows contiguous, the leading axes any strides: a head's slice of a [B, H, Tq, Tk] buffer.
    if (out->defined() && (out->sizes() != at::IntArrayRef(full) || out->stride(-1) != 1 ||
                           (Tq > 1 && out->stride(-2) != Tk) ||
                           out->scalar_type() != torch::kFloat || !out->device().is_cpu()))
      return std::nullopt;
  }

  const torch::Tensor maskE = mask.defined() ? mask.expand(full) : torch::Tensor(),
                      biasE = bias.defined() ? bias.expand(full) : torch::Tensor();
  const std::vector<int64_t> qAt = leadingOffsets(q, lead), kAt = leadingOffsets(k, lead),
                             vAt = leadingOffsets(v, lead),
                             maskAt = mask.defined() ? leadingOffsets(maskE, lead)
                                                     : std::vector<int64_t>(),
                             biasAt = bias.defined() ? leadingOffsets(biasE, lead)
                                                     : std::vector<int64_t>();
  const int64_t N = static_cast<int64_t>(qAt.size());

  // Which keys each query row sees, once per distinct mask matrix (a [B, 1, T, T] mask expanded
  // over the heads repeats its matrix H times).
  std::vector<std::size_t> rangeOf(static_cast<std::size_t>(N), 0);
  std::vector<std::vector<int32_t>> firsts, ends;
  if (runs) {
    // Leading index n = (..., item, head): its item is (n / heads) % items.
    const int64_t heads = lead.back(), items = lead[lead.size() - 2];
    for (int64_t b = 0; b < runs->items; ++b) {
      const auto at = static_cast<std::ptrdiff_t>(b * Tq);
      firsts.emplace_back(runs->first.begin() + at, runs->first.begin() + at + Tq);
      ends.emplace_back(runs->end.begin() + at, runs->end.begin() + at + Tq);
    }
    for (int64_t n = 0; n < N; ++n)
      rangeOf[static_cast<std::size_t>(n)] =
          runs->items == 1 ? 0 : static_cast<std::size_t>((n / heads) % items);
  } else if (mask.defined()) {
    const float* base = maskE.data_ptr<float>();
    const int64_t rowStride = maskE.stride(-2);
    int64_t seen = -1;
    for (int64_t n = 0; n < N; ++n) {
      if (maskAt[static_cast<std::size_t>(n)] != seen) {
        seen = maskAt[static_cast<std::size_t>(n)];
        firsts.emplace_back();
        ends.emplace_back();
        if (!visibleKeys(base + seen, rowStride, Tq, Tk, firsts.back(), ends.back()))
          return std::nullopt;
      }
      rangeOf[static_cast<std::size_t>(n)] = firsts.size() - 1;
    }
  }

  BlockedAttention r;
  const bool discard = rowLogSumExpOut.defined() && !attentionOut.defined();
  if (!discard) r.attention = attentionOut.defined() ? attentionOut : torch::empty(full);
  float* const lse = rowLogSumExpOut.defined() ? rowLogSumExpOut.data_ptr<float>() : nullptr;
  if (scoresOut.defined())
    r.scores = scoresOut;
  else if (wantScores)
    r.scores = torch::empty(full);
  std::vector<int64_t> valueShape(lead.begin(), lead.end());
  valueShape.push_back(Tq);
  valueShape.push_back(hdv);
  r.values = torch::empty(valueShape);

  // The AVX-512 kernels want contiguous head columns and whole 16-float value registers; any
  // other layout takes ATen's products (the same numbers, slower).
  const bool kernels = attention_kernels::available() && q.stride(-1) == 1 && k.stride(-1) == 1 &&
                       v.stride(-1) == 1 && hdv % 16 == 0;
  const int64_t R = rowsPerBlock(Tq, kernels), blocks = (Tq + R - 1) / R;
  float* const attention = discard ? nullptr : r.attention.data_ptr<float>();
  float* const scores = r.scores.defined() ? r.scores.data_ptr<float>() : nullptr;
  const std::vector<int64_t> attentionAt =
                                 discard ? std::vector<int64_t>(static_cast<std::size_t>(N), 0)
                                         : leadingOffsets(r.attention, lead),
                             scoresAt =
                                 scores ? leadingOffsets(r.scores, lead) : std::vector<int64_t>();
  float* const values = r.values.data_ptr<float>();
  // Only read through the views below (from_blob takes a mutable pointer).
  float* const qData = q.data_ptr<float>();
  float* const kData = k.data_ptr<float>();
  float* const vData = v.data_ptr<float>();
  float* const maskData = mask.defined() ? maskE.data_ptr<float>() : nullptr;
  float* const biasData = bias.defined() ? biasE.data_ptr<float>() : nullptr;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  const int64_t panels = (Tk + attention_kernels::kPanel - 1) / attention_kernels::kPanel,
                sWidth = kernels ? panels * attention_kernels::kPanel : Tk;

  // The run's cancel flag, read here: the threads below do not have the caller's. A set flag
  // skips the remaining blocks, and the call throws once they are done.
  const std::atomic<bool>* const cancel = CancelScope::current();
  // Heads and row blocks in one range, heads outermost: each thread takes whole heads (a causal
  // head's blocks grow with the row, so splitting by head keeps the threads' work equal), and the
  // matrix products inside run single-threaded (a parallel region is not split again).
  at::parallel_for(0, N * blocks, 1, [&](int64_t begin, int64_t end) {
    // Also outside a run (its guard reaches every thread), and restored: a chunk may run on the
    // caller's own thread.
    const FlushDenormals::ThisThread flush;
    // Scores; ATen's path also needs the softmax beside them (the kernels write it in place).
    const torch::Tensor scratch = torch::empty({(kernels ? 1 : 2) * R * sWidth});
    float* const sBuf = scratch.data_ptr<float>();
    float* const pBuf = sBuf + R * sWidth;
    // A chunk's jobs are consecutive, so its keys are packed once per head, not once per block.
    std::vector<float> packed(kernels ? attention_kernels::packedKeysSize(Tk, hd) : 0),
        packedV(kernels ? static_cast<std::size_t>(Tk * hdv) : 0);
    int64_t packedHead = -1;
    for (int64_t job = begin; job < end; ++job) {
      if (cancel && cancel->load(std::memory_order_relaxed)) return;
      const int64_t n = job / blocks, r0 = (job % blocks) * R, rows = std::min(R, Tq - r0);
      int64_t kb = 0, ke = Tk;
      const int32_t *runFirst = nullptr, *runEnd = nullptr;  // the row's visible keys (runs)
      if (!firsts.empty()) {
        const std::vector<int32_t>& f = firsts[rangeOf[static_cast<std::size_t>(n)]];
        const std::vector<int32_t>& e = ends[rangeOf[static_cast<std::size_t>(n)]];
        kb = *std::min_element(f.begin() + r0, f.begin() + r0 + rows);
        ke = *std::max_element(e.begin() + r0, e.begin() + r0 + rows);
        if (runs) {
          runFirst = f.data() + r0;
          runEnd = e.data() + r0;
        }
      }
      const int64_t nk = ke - kb;
      // Keys of the block's span [kb, ke) that row i does not see: -inf, as the mask's tensor
      // would add (x + −inf = −inf for the finite scores).
      const auto hideOutsideRun = [&](float* x, int64_t i) {
        if (!runFirst) return;
        std::fill(x, x + (runFirst[i] - kb), kNegInf);
        std::fill(x + (runEnd[i] - kb), x + nk, kNegInf);
      };
      const Matrix qm{qData + qAt[static_cast<std::size_t>(n)], q.stride(-2), q.stride(-1)};
      const Matrix km{kData + kAt[static_cast<std::size_t>(n)], k.stride(-2), k.stride(-1)};
      const Matrix vm{vData + vAt[static_cast<std::size_t>(n)], v.stride(-2), v.stride(-1)};
      const Matrix am{discard ? nullptr : attention + attentionAt[static_cast<std::size_t>(n)], Tk,
                      1};
      float* const lseRows = lse ? lse + n * Tq : nullptr;
      float* const scoreRows = scores ? scores + scoresAt[static_cast<std::size_t>(n)] : nullptr;
      const Matrix om{values + (n * Tq + r0) * hdv, hdv, 1};
      const float* const biasRows =
          biasData ? biasData + biasAt[static_cast<std::size_t>(n)] : nullptr;
      const float* const maskRows =
          maskData ? maskData + maskAt[static_cast<std::size_t>(n)] : nullptr;
      const int64_t biasStride = biasData ? biasE.stride(-2) : 0,
                    maskStride = maskData ? maskE.stride(-2) : 0;

      if (kernels) {
        if (packedHead != n) {
          attention_kernels::packKeys(km.data, km.rowStride, Tk, hd, packed.data());
          attention_kernels::copyRows(vm.data, vm.rowStride, Tk, hdv, packedV.data());
          packedHead = n;
        }
        const int64_t p0 = kb / attention_kernels::kPanel,
                      p1 = (ke + attention_kernels::kPanel - 1) / attention_kernels::kPanel;
        attention_kernels::queryKeys(qm.data + r0 * qm.rowStride, qm.rowStride, rows, hd,
                                     packed.data(), p0, p1, static_cast<float>(scale), sBuf,
                                     sWidth);
        for (int64_t i = 0; i < rows; ++i) {
          float* const x = sBuf + i * sWidth + (kb - p0 * attention_kernels::kPanel);
          if (softcap > 0) capRow(x, nk, static_cast<float>(softcap));
          attention_kernels::addRow(x, biasRows ? biasRows + (r0 + i) * biasStride + kb : nullptr,
                                    maskRows ? maskRows + (r0 + i) * maskStride + kb : nullptr, nk);
          hideOutsideRun(x, i);
          if (scores) {
            float* const row = scoreRows + (r0 + i) * Tk;
            attention_kernels::streamFill(row, kb, kNegInf);
            std::copy(x, x + nk, row + kb);
            attention_kernels::streamFill(row + ke, Tk - ke, kNegInf);
          }
          if (lseRows) lseRows[r0 + i] = logSumExp(x, nk);
          if (discard) {
            attention_kernels::softmaxRow(x, nk, nullptr);
            continue;
          }
          float* const row = am.data + (r0 + i) * Tk;
          attention_kernels::streamFill(row, kb, 0.0f);
          attention_kernels::softmaxRow(x, nk, row + kb);
          attention_kernels::streamFill(row + ke, Tk - ke, 0.0f);
        }
        // Weights·v reads the block's weights from the scratch (in cache), not the result.
        attention_kernels::weightsValues(sBuf + (kb - p0 * attention_kernels::kPanel), sWidth, rows,
                                         nk, packedV.data() + kb * hdv, hdv, hdv, om.data, hdv);
        attention_kernels::streamFence();
        continue;
      }

      torch::Tensor s = torch::from_blob(sBuf, {rows, nk}, torch::kFloat);
      torch::Tensor p = torch::from_blob(pBuf, {rows, nk}, torch::kFloat);
      at::mm_out(s, qm.view(r0, rows, 0, hd), km.view(kb, nk, 0, hd).t());
      if (scale != 1.0) s.mul_(scale);
      if (softcap > 0) s.div_(softcap).tanh_().mul_(softcap);
      if (biasRows)
        s.add_(Matrix{const_cast<float*>(biasRows), biasStride, 1}.view(r0, rows, kb, nk));
      if (maskRows)
        s.add_(Matrix{const_cast<float*>(maskRows), maskStride, 1}.view(r0, rows, kb, nk));
      for (int64_t i = 0; i < rows && runFirst; ++i)
        hideOutsideRun(s.data_ptr<float>() + i * nk, i);
      if (scores) {
        const Matrix sm{scoreRows, Tk, 1};
        sm.view(r0, rows, kb, nk).copy_(s);
        if (kb > 0) sm.view(r0, rows, 0, kb).fill_(kNegInf);
        if (ke < Tk) sm.view(r0, rows, ke, Tk - ke).fill_(kNegInf);
      }
      if (lseRows) {
        const float* sRows = s.data_ptr<float>();
        for (int64_t i = 0; i < rows; ++i) lseRows[r0 + i] = logSumExp(sRows + i * nk, nk);
      }
      at::softmax_out(p, s, 1);
      if (!discard) {
        am.view(r0, rows, kb, nk).copy_(p);
        if (kb > 0) am.view(r0, rows, 0, kb).zero_();
        if (ke < Tk) am.view(r0, rows, ke, Tk - ke).zero_();
      }
      torch::Tensor out = om.view(0, rows, 0, hdv);
      at::mm_out(out, p, vm.view(kb, nk, 0, hdv));
    }
  });
  CancelScope::poll();
  return r;
}

}  // namespace attnscope
