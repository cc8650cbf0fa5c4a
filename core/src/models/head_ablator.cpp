// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/head_ablator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "attnscope/error.h"
#include "nn/attention_mask.h"

#if defined(__SSE__) || defined(_M_X64)
#include <xmmintrin.h>
#define ATTNSCOPE_HAS_MXCSR 1
#endif

namespace attnscope {
namespace {

// Subnormal floats flushed to zero on this thread and LibTorch's intra-op threads while alive,
// as they were before afterwards. A peaked softmax sends gradients of 1e-40 and less back
// through every layer, and a matmul over subnormals runs about 100x slower on x86 (the
// backward of random-weight GPT-2 small took 4.5 forwards instead of 2). Values below 1.2e-38
// change a log-probability by nothing measurable.
class FlushSubnormals final {
 public:
  FlushSubnormals() { m_saved = apply(true); }
  ~FlushSubnormals() { apply(false); }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  // Sets (or restores) FTZ and DAZ on every thread that runs kernels; returns this thread's old
  // control word.
  unsigned apply(bool flush) const {
#ifdef ATTNSCOPE_HAS_MXCSR
    constexpr unsigned kFtzDaz = 0x8040;
    const unsigned old = _mm_getcsr();
    const auto set = [&](unsigned csr) {
      _mm_setcsr(flush ? (csr | kFtzDaz) : ((csr & ~kFtzDaz) | (m_saved & kFtzDaz)));
    };
    set(old);
    at::parallel_for(0, at::get_num_threads(), 1, [&](int64_t, int64_t) { set(_mm_getcsr()); });
    return old;
#else
    (void)flush;
    return 0;
#endif
  }
  unsigned m_saved = 0;
};

}  // namespace

HeadAblator::HeadAblator(TransformerFamily& family, const BatchInput& batch,
                         const torch::Device& device)
    : m_family(family), m_batch(batch), m_device(device) {
  const ModelInfo mi = family.info();
  m_layers = mi.layers;
  m_heads = mi.heads;
  MaskOptions o;
  o.keyLengths = batch.keyLengths;
  o.queries = batch.maxQuery;
  o.keys = batch.maxKey;
  o.causal = mi.causal;
  o.slidingWindow = mi.slidingWindow;
  m_mask = buildMask(o).to(device);
  m_positions =
      torch::arange(batch.maxQuery, torch::TensorOptions().dtype(torch::kLong).device(device));
}

torch::Tensor HeadAblator::layers(torch::Tensor x, int from, const torch::Tensor& keep,
                                  const RunRequest& request, std::vector<torch::Tensor>* inputs) {
  TraceRecorder noTrace(nullptr);
  for (int l = from; l < m_layers; ++l) {
    throwIfCancelled(request);
    LayerContext ctx;
    ctx.layer = l;
    ctx.mask = m_mask;
    ctx.positions = m_positions;
    ctx.context = m_context;
    ctx.keyLengths = &m_batch.keyLengths;
    ctx.rec = &noTrace;
    // No attention buffers: each layer's softmax is a temporary, dropped with the layer.
    if (keep.defined() && keep.dim() == 2) {
      ctx.buffers.headMask = keep[l];
    } else if (keep.defined() && l == from) {
      ctx.buffers.headMask = keep;
    }
    if (inputs) inputs->push_back(x);
    x = m_family.layer(l, x, ctx);
  }
  return x;
}

torch::Tensor HeadAblator::chooseTarget(const torch::Tensor& x, const AblationRequest& request) {
  const std::vector<Token>& tokens = m_batch.tokens[0];
  const int T = static_cast<int>(tokens.size());
  const std::optional<int64_t> maskId = m_family.maskTokenId();
  const std::string name = m_family.info().name;
  if (request.maskPosition < 0) {
    // Decoders: the next token after the last position, when the model has a head for it.
    m_position = T - 1;
    m_maskFill = false;
    const torch::Tensor logits = readout(x);
    if (logits.defined()) return logits;
    m_maskFill = true;
    m_position = -1;
    for (int t = 0; t < T && maskId; ++t) {
      if (tokens[static_cast<std::size_t>(t)].id == *maskId) {
        m_position = t;
        break;
      }
    }
    if (m_position < 0) {
      if (!maskId)
        throw Error(ErrorKind::InvalidArgument,
                    name +
                        " predicts no token (no language-model head and no mask token): "
                        "there is no prediction whose heads could be ablated");
      throw Error(ErrorKind::InvalidArgument,
                  "head ablation of an encoder reads the fill of a mask: put " +
                      m_family.info().maskToken + " in the text");
    }
  } else {
    if (request.maskPosition >= T || !maskId ||
        tokens[static_cast<std::size_t>(request.maskPosition)].id != *maskId)
      throw Error(ErrorKind::InvalidArgument,
                  "position " + std::to_string(request.maskPosition) + " is not a mask token" +
                      (maskId ? " of the text (" + std::to_string(T) + " tokens)"
                              : ": " + name + " fills no masks"));
    m_position = request.maskPosition;
    m_maskFill = true;
  }
  const torch::Tensor logits = readout(x);
  if (!logits.defined())
    throw Error(ErrorKind::InvalidArgument,
                name + " has no masked-language-model head: it cannot fill " +
                    tokens[static_cast<std::size_t>(m_position)].label +
                    " (the checkpoint holds the encoder only)");
  return logits;
}

double HeadAblator::logProbability(const torch::Tensor& logits) const {
  return torch::log_softmax(logits.detach().to(torch::kCPU, torch::kDouble), -1)[m_target]
      .item<double>();
}

torch::Tensor HeadAblator::finalHidden(const torch::Tensor& x) {
  // The final norms work position by position, so only the position read is normalised.
  return m_family.finalNorm(x.narrow(1, m_position, 1))[0][0];
}

torch::Tensor HeadAblator::headLogits(const torch::Tensor& hidden) {
  return m_maskFill ? m_family.maskLogits(hidden) : m_family.logits(hidden);
}

torch::Tensor HeadAblator::readout(const torch::Tensor& x) { return headLogits(finalHidden(x)); }

HeadAblation HeadAblator::start(const torch::Tensor& logits, bool estimate) const {
  HeadAblation r;
  r.tokens = m_batch.tokens[0];
  r.notices = m_batch.notices;
  r.position = m_position;
  r.maskFill = m_maskFill;
  r.estimate = estimate;
  r.layers = m_layers;
  r.heads = m_heads;
  r.target = m_family.vocabularyToken(m_target);
  r.baseline = std::exp(logProbability(logits));
  r.probabilities = FloatTensor({m_layers, m_heads});
  r.logProbChange = FloatTensor({m_layers, m_heads});
  return r;
}

HeadAblation HeadAblator::exact(const AblationRequest& request) {
  c10::InferenceMode inference;
  const Embedded in = m_family.embed(m_batch, request.run, m_device);
  m_context = in.context;
  std::vector<torch::Tensor> inputs;  // [L] of [1, T, C]: the unablated input of each layer
  const torch::Tensor top = layers(in.x, 0, {}, request.run, &inputs);
  const torch::Tensor logits = chooseTarget(top, request);
  m_target = logits.argmax().item<int64_t>();
  HeadAblation r = start(logits, false);
  const torch::Tensor unablated = finalHidden(top);  // [C]
  const int total = m_layers * m_heads;
  int done = 0;
  const torch::Tensor ones = torch::ones({m_heads}, torch::TensorOptions().device(m_device));
  for (int l = 0; l < m_layers; ++l) {
    // One readout per layer, of the unablated state and every head's: the output head's weights
    // ([V, C], often the largest matrix) are read once per layer instead of once per head, and
    // each change is taken against the same matmul, so a head that changes nothing gives 0.
    std::vector<torch::Tensor> rows{unablated};
    for (int h = 0; h < m_heads; ++h) {
      torch::Tensor keep = ones.clone();
      keep[h] = 0;
      rows.push_back(
          finalHidden(layers(inputs[static_cast<std::size_t>(l)], l, keep, request.run)));
      if (request.progress) request.progress(++done, total);
    }
    const torch::Tensor logP =  // [1 + H]
        torch::log_softmax(headLogits(torch::stack(rows)).to(torch::kCPU, torch::kDouble), -1)
            .select(1, m_target)
            .contiguous();
    const double* lp = logP.data_ptr<double>();
    for (int h = 0; h < m_heads; ++h) {
      const double change = lp[1 + h] - lp[0];
      const std::size_t at = static_cast<std::size_t>(l) * m_heads + h;
      r.probabilities.data[at] = static_cast<float>(r.baseline * std::exp(change));
      r.logProbChange.data[at] = static_cast<float>(change);
    }
  }
  return r;
}

HeadAblation HeadAblator::estimate(const AblationRequest& request) {
  // Grads flow to the head mask only: the weights stay frozen (autograd::grad computes no
  // parameter gradients even for the tiny GPT's trainable ones).
  torch::AutoGradMode grad(true);
  const FlushSubnormals flush;
  const torch::Tensor keep =
      torch::ones({m_layers, m_heads}, torch::TensorOptions().device(m_device))
          .requires_grad_(true);
  const Embedded in = m_family.embed(m_batch, request.run, m_device);
  m_context = in.context;
  const torch::Tensor logits = chooseTarget(layers(in.x, 0, keep, request.run), request);
  m_target = logits.detach().argmax().item<int64_t>();
  HeadAblation r = start(logits, true);
  const torch::Tensor logP = torch::log_softmax(logits, -1)[m_target];
  throwIfCancelled(request.run);
  // ∂ log p / ∂m_h = Σ z_h · ∂ log p / ∂z_h, since the head's output enters as m_h · z_h.
  const torch::Tensor slope =
      torch::autograd::grad({logP}, {keep})[0].to(torch::kCPU, torch::kDouble).contiguous();
  const double* g = slope.data_ptr<double>();
  for (std::size_t i = 0; i < r.logProbChange.data.size(); ++i) {
    const double change = -g[i];  // m from 1 to 0
    r.logProbChange.data[i] = static_cast<float>(change);
    // First order, p·(1 + Δ log p) can leave [0, 1] where the linearisation is poor: clamped, so
    // no reader ever sees an impossible probability (the views say it is an estimate).
    r.probabilities.data[i] = static_cast<float>(std::clamp(r.baseline * (1 + change), 0.0, 1.0));
  }
  const int total = m_layers * m_heads;
  if (request.progress) request.progress(total, total);
  return r;
}

}  // namespace attnscope
