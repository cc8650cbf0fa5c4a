// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/layer_stack.h"

#include <utility>

#include "generation/layer_kv_cache.h"
#include "nn/attention_mask.h"
#include "nn/sparse_moe_block.h"
#include "runtime/batch_input.h"
#include "runtime/cancel_scope.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

torch::Tensor LayerStack::run(torch::Tensor x, const RunRequest& request,
                              const std::string& variant) const {
  // Polled between layers here, and inside a layer by the attention kernel and the products of
  // compact weights (a long input's layer takes minutes).
  const CancelScope cancelScope(request.cancel);
  for (int64_t l = 0; l < layers; ++l) {
    throwIfCancelled(request);
    LayerTrace trace;
    trace.variant = variant;
    trace.stack = name;
    TraceRecorder rec(traces ? &trace : nullptr);
    const TraceRecorder::Scope current(rec);  // linearForward's dequantize steps
    LayerContext ctx;
    ctx.layer = static_cast<int>(l);
    ctx.mask = mask;
    ctx.positions = positions;
    ctx.sequenceLength = sequenceLength;
    ctx.context = context;
    ctx.keyLengths = keyLengths;
    ctx.crossMask = crossMask;
    ctx.contextLengths = contextLengths;
    ctx.rec = &rec;
    MoeRouting routed;
    if (routing) ctx.routing = &routed;
    if (self) {
      ctx.buffers = self->buffers(l);
      ctx.valueNorms = self->valueNorms();
      ctx.scoreTerms = self->scoreTerms(l);
      if (attentionWritten && self->finalOnceWritten(l, *queryLengths))
        ctx.buffers.written = [this, l] { attentionWritten(l); };
    }
    if (cross) ctx.crossBuffers = cross->buffers(l);
    if (cache) ctx.buffers.kvCache = &cache->layer(l);
    if (crossCache) ctx.crossBuffers.kvCache = &crossCache->layer(l);
    x = layer(static_cast<int>(l), x, ctx);
    if (routing) routing->push_back(std::move(routed));  // empty for a dense layer
    if (self)
      self->finish(l, ctx.buffers, ctx.valueNorms, *queryLengths, *keyLengths, ctx.scoreTerms);
    if (cross) cross->finish(l, ctx.crossBuffers, {}, *queryLengths, *contextLengths);
    if (traces) traces->push_back(std::move(trace));
    if (progressTotal > 0 && request.progress)
      request.progress(progressBase + static_cast<int>(l) + 1, progressTotal);
    if (hiddenDone) hiddenDone(l, x);
    if (layerDone) layerDone(l);
  }
  return x;
}

AttentionMask deviceMask(const std::vector<int>& keyLengths, int64_t Tq, int64_t Tk, bool causal,
                         int slidingWindow, const torch::Device& dev) {
  return deviceMask(keyLengths, Tq, Tk, causal, slidingWindow, dev, 0);
}

AttentionMask deviceMask(const std::vector<int>& keyLengths, int64_t Tq, int64_t Tk, bool causal,
                         int slidingWindow, const torch::Device& dev, int64_t queryOffset) {
  MaskOptions o;
  o.queryOffset = queryOffset;
  o.keyLengths = keyLengths;
  o.queries = Tq;
  o.keys = Tk;
  o.causal = causal;
  o.slidingWindow = slidingWindow;
  return buildMask(o).to(dev);
}

}  // namespace attnscope
