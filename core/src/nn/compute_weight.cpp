// SPDX-License-Identifier: GPL-3.0-or-later
#include "nn/compute_weight.h"

#include <algorithm>
#include <vector>

#include "nn/packed_weights.h"
#include "nn/widened_weights.h"
#include "runtime/cancel_scope.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

torch::Tensor widenWeight(const torch::Tensor& w) {
  // A packed (quantized) weight is widened per use, never kept: keeping it would undo the point.
  if (const auto layout = packedLayout(w)) return unpackWeight(w, *layout);
  if (WidenedWeights* cache = WidenedWeights::active())
    return cache->widen(w, WidenedWeights::activeBudget());
  return w.to(torch::kFloat);
}

namespace {

/// Rows of a compact weight widened at a time: about 4 MiB of float32 on one thread (256 rows of
/// a 4096-wide weight), which stays in the CPU's cache while the product reads it; 16 MiB on more,
/// because every block is two parallel regions (the widening copy and the product) whose threads
/// wait for each other, and on a busy machine a waiting thread loses its time slice (Llama-3.1-8B
/// shapes, a 14336 × 4096 weight, 256 tokens, two threads at load 4.5: 4 MiB blocks 1.8 s, 16 MiB
/// 0.60 s, the whole weight at once 0.59 s; one thread, 14 tokens: 101, 105 and 303 ms). A
/// multiple of 16 rows.
int64_t widenedRowsPerBlock(int64_t in) {
  const int64_t floats = at::get_num_threads() > 1 ? int64_t{1} << 22 : int64_t{1} << 20;
  const int64_t rows = floats / std::max<int64_t>(1, in) / 16 * 16;
  return std::max<int64_t>(16, rows);
}

/// x @ weightᵀ with a compact weight widened a block of rows at a time into one reused buffer,
/// instead of all at once: a BF16 model's run then reads its weights' 2 bytes a parameter and
/// writes no float32 copy of a whole weight to memory (Llama-3.1-8B shapes at 256 tokens, two
/// threads: 54 s of system time for page-faulted copies fell to 6 s, the peak RSS from 17.8 to
/// 15.5 GB). Kept float32 copies (WidenedWeights) are not used here: reading twice the bytes, they
/// were slower than widening the BF16 blocks (Llama-3.2-1B shapes, 14 tokens, one thread: 1640 ms
/// from 4.9 GB of copies, 1201 ms from the BF16 weights), so a linear layer keeps none.
/// x: [rows, in] float32, weight: [out, in] -> [rows, out]
/// A packed weight (packed_weights.h: GGUF blocks) is widened the same way, a block of rows at a
/// time from its quantized bytes, so no layer's float32 copy is ever whole.
torch::Tensor blockedLinear(const torch::Tensor& flat, const torch::Tensor& weight,
                            const torch::Tensor& bias, const PackedWeightLayout* packed) {
  const int64_t rows = flat.size(0);
  const int64_t in = packed ? packed->columns : weight.size(1);
  const int64_t out = packed ? packed->rows : weight.size(0);
  torch::Tensor y = torch::empty({rows, out}, flat.options());
  const int64_t step = widenedRowsPerBlock(in);
  const torch::Tensor buffer = torch::empty({std::min(step, out), in}, flat.options());
  for (int64_t r0 = 0; r0 < out; r0 += step) {
    CancelScope::poll();  // a block of a long input's product takes seconds
    const int64_t n = std::min(step, out - r0);
    torch::Tensor block = buffer.narrow(0, 0, n);  // [n, in] float32, contiguous
    if (packed)
      unpackRows(weight, *packed, r0, n, block.data_ptr<float>());
    else
      block.copy_(weight.narrow(0, r0, n));
    torch::Tensor dst = y.narrow(1, r0, n);  // [rows, n], rows `out` apart
    if (rows <= 2) {
      // A matrix-vector product per row reads the block once (see linearForward).
      for (int64_t r = 0; r < rows; ++r) {
        torch::Tensor row = dst[r];
        torch::mv_out(row, block, flat[r]);
      }
    } else {
      torch::mm_out(dst, flat, block.t());
    }
    if (bias.defined()) dst.add_(bias.narrow(0, r0, n).to(torch::kFloat));
  }
  return y;
}

}  // namespace

torch::Tensor linearForward(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
  const int64_t in = x.dim() > 0 ? x.size(-1) : 0;
  const int64_t rows = in > 0 ? x.numel() / in : 0;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  if (!shape.empty() && weight.dim() == 2) shape.back() = weight.size(0);
  const std::shared_ptr<const PackedWeightLayout> packed = packedLayout(weight);
  TORCH_CHECK(!packed || in == packed->columns, "a packed weight of ", packed ? packed->columns : 0,
              " columns applied to ", in, " features");
  if (packed && TraceRecorder::current())
    TraceRecorder::current()->recordDequantize(packed->typeName, packed->rows, packed->columns);
  // Compact weights without gradients (every run; not attribution's forward, whose graph needs
  // whole tensors): widened block by block.
  if (rows >= 1 && weight.dim() == 2 && weight.scalar_type() != torch::kFloat &&
      weight.device().is_cpu() && x.device().is_cpu() && x.scalar_type() == torch::kFloat &&
      !torch::GradMode::is_enabled())
    return blockedLinear(x.reshape({rows, in}), weight, bias, packed.get()).view(shape);
  // A transposed packed weight (GPT-2's Conv1D) widens to its parameter's [in, out]; the
  // product reads the stored [out, in] rows, as the blocked path above does.
  const torch::Tensor b = computeWeight(bias);
  const torch::Tensor w =
      packed && packed->transposed ? computeWeight(weight).t() : computeWeight(weight);
  if (rows < 1 || rows > 2 || w.dim() != 2 || !x.device().is_cpu() ||
      x.scalar_type() != torch::kFloat || w.scalar_type() != torch::kFloat ||
      (b.defined() && b.scalar_type() != torch::kFloat)) {
    return torch::nn::functional::linear(x, w, b);
  }
  const torch::Tensor flat = x.reshape({rows, in});
  std::vector<torch::Tensor> out;
  for (int64_t r = 0; r < rows; ++r)
    out.push_back(b.defined() ? torch::addmv(b, w, flat[r]) : torch::mv(w, flat[r]));
  return torch::stack(out).view(shape);
}

}  // namespace attnscope
