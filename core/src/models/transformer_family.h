// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/model.h"
#include "nn/attention_output.h"
#include "runtime/batch_input.h"
#include "runtime/trace_recorder.h"

namespace attnscope {

struct MoeRouting;  // nn/sparse_moe_block.h

/// The hidden states a family feeds into its first layer.
struct Embedded {
  torch::Tensor x;        // [B, Tq, C] on the run's device
  torch::Tensor context;  // [B, Tk, C] keys/values of cross-attention; undefined for self-attention
};

/// Everything one layer call needs besides the hidden states.
struct LayerContext {
  int layer = 0;
  AttentionMask mask;       // [B, 1, Tq, Tk] additive (0 / -inf); undefined when nothing is masked
  torch::Tensor positions;  // [Tq] int64: 0..Tq-1
  // Generation: the length of the sequence the step covers (the prompt and the tokens so far),
  // which the step may run in two passes (the prompt but its last token, then that token).
  // Hugging Face runs the step as one call and picks LongRoPE's factors by its largest position
  // + 1 (Phi-3); 0: the largest of `positions` + 1, as in a run.
  int64_t sequenceLength = 0;
  torch::Tensor context;  // [B, Tk, C] for cross-attention; undefined otherwise
  const std::vector<int>* keyLengths = nullptr;  // [B] real keys per item (ALiBi)
  AttentionBuffers buffers;  // the layer writes its [B, H, Tq, Tk] attention (and scores) here
  torch::Tensor valueNorms;  // [B, H, Tk] on the device: when defined, the layer writes each
                             // head's ‖(x_k W_V^h + b_V^h) W_O^h‖ here (supportsValueNorms)
  std::vector<torch::Tensor> scoreTerms;  // when not empty, one [B, H, Tq, Tk] on the device per
                                          // ModelInfo::scoreTerms name: the layer writes each
                                          // term of its scores there (scaled, before the mask)
  TraceRecorder* rec = nullptr;   // records the whole block: norms, qkv, attention, MLP, residuals
  MoeRouting* routing = nullptr;  // when set, a mixture-of-experts layer leaves its router's
                                  // choices here ([B, T, k] experts and weights; routerTopK)

  // Decoder layers of an encoder-decoder only (TransformerFamily::decoderLayer): `mask` is then
  // the causal self-attention mask over the decoder inputs and `context` the encoder's output.
  AttentionMask crossMask;  // [B, 1, Tq, Ts] additive: the source's padding
  const std::vector<int>* contextLengths = nullptr;  // [B] real source tokens per item
  AttentionBuffers crossBuffers;  // the layer writes its [B, H, Tq, Ts] cross-attention here
};

/// One model family: what TransformerModel::run needs from it. A family owns its configuration,
/// tokenizer and torch modules and supplies the embedding, the layers and the head; running,
/// batching, masks, memory estimate, device choice, the trace and predictions are done once in
/// TransformerModel for every family.
class TransformerFamily {
 public:
  virtual ~TransformerFamily() = default;

  /// Name, layer and head counts, width, positions, causal, variant.
  virtual ModelInfo info() const = 0;
  virtual std::vector<Token> tokenize(const std::string& text) const = 0;
  /// The modules holding every parameter, under their checkpoint names.
  virtual torch::nn::Module& module() = 0;

  /// The input of the first layer. The default looks up the token ids; the toy layer overrides it
  /// (seeded embeddings, random input, a context).
  virtual Embedded embed(const BatchInput& batch, const RunRequest& request,
                         const torch::Device& device);
  /// ids: [B, T] int64 on the device -> [B, T, C]. Used by the default embed (and, for
  /// encoder-decoders, the encoder's input).
  virtual torch::Tensor embedIds(const torch::Tensor& ids) { return {}; }
  /// ids at positions start.. ([B, T] int64) -> [B, T, C]: generation's new tokens after `start`
  /// cached ones. The default is embedIds, right for every family whose positions are applied in
  /// the layers (rotary, ALiBi); one that adds absolute position embeddings overrides it.
  virtual torch::Tensor embedIdsAt(const torch::Tensor& ids, int64_t start) {
    (void)start;
    return embedIds(ids);
  }
  /// Whether step-by-step generation may run its layers with a key/value cache
  /// (LayerContext::buffers.kvCache, positions and masks offset by the cached length): layers
  /// that attend through scaledDotProduct and embedIdsAt right for start > 0. Encoder-decoders:
  /// the decoder's layers likewise (embedDecoderIdsAt, position biases offset by the cached
  /// length), cross-attention through projectedAttention (its keys and values cached once,
  /// LayerContext::crossBuffers.kvCache). Default: no.
  virtual bool supportsKvCache() const { return false; }
  /// x: [B, Tq, C] -> [B, Tq, C].
  virtual torch::Tensor layer(int index, const torch::Tensor& x, LayerContext& context) = 0;
  /// After the last layer (ln_f). Default: unchanged.
  virtual torch::Tensor finalNorm(const torch::Tensor& x) { return x; }
  /// hidden: [C] -> next-token logits [V]; undefined for a model without a language-model head.
  virtual torch::Tensor logits(const torch::Tensor& hidden) { return {}; }
  /// Encoders: a sentence pair as the tokenizer's template joins it (Token::segment set). The
  /// default refuses (checkRequest does, before any work).
  virtual std::vector<Token> tokenizePair(const std::string& text, const std::string& pair) const;
  /// hidden: [C] at a mask token -> logits [V] of the masked-language-model head; undefined for a
  /// model without one.
  virtual torch::Tensor maskLogits(const torch::Tensor& hidden) { return {}; }
  /// The mask token's id ([MASK], <mask>) when the tokenizer has one.
  virtual std::optional<int64_t> maskTokenId() const { return std::nullopt; }
  /// What the user must know about the loaded model (ignored head tensors, say), once per run.
  virtual std::vector<std::string> notices() const { return {}; }
  /// The vocabulary entry of an id, for predictions.
  virtual Token vocabularyToken(int64_t id) const;
  /// Activation bytes per token beyond the attention, for the memory estimate.
  virtual uint64_t activationBytesPerToken() const;
  /// Whether layer() fills LayerContext::valueNorms. Default: no (such a request is refused).
  virtual bool supportsValueNorms() const { return false; }
  /// Mixture-of-experts families: the experts each token is routed to (k > 0); layer() then fills
  /// LayerContext::routing when it is set (a dense layer leaves it empty). Default: 0, none.
  virtual int routerTopK() const { return 0; }
  /// Which run requests the family can serve; throws Error(InvalidArgument) with a message
  /// the user can act on. The default refuses random input and a context.
  virtual void checkRequest(const RunRequest& request) const;

  // Encoder-decoders (info().decoderLayers > 0). layer(), embedIds() and finalNorm() are then the
  // encoder's; TransformerModel runs the decoder stack after it, with cross-attention over the
  // encoder's output, and takes the predictions from logits() of the decoder's hidden states.

  /// A target text's tokens as the decoder reads them after the start token (teacher forcing:
  /// Hugging Face's shift_right of the labels, so no trailing end-of-sequence token). Default:
  /// throws (not an encoder-decoder).
  virtual std::vector<Token> tokenizeTarget(const std::string& text) const;
  /// The decoder's first input (decoder_start_token_id).
  virtual Token decoderStartToken() const;
  /// The id that ends generation (eos_token_id), when the model has one.
  virtual std::optional<int64_t> endTokenId() const { return std::nullopt; }
  /// ids: [B, Tt] int64 on the device -> [B, Tt, C], the decoder's first input.
  virtual torch::Tensor embedDecoderIds(const torch::Tensor& ids) { return {}; }
  /// The decoder's ids at positions start.. -> [B, Tt, C], as embedIdsAt for the decoder
  /// (generation through the cache). The default is embedDecoderIds, right for a decoder without
  /// absolute position embeddings (T5); BART and Marian override it.
  virtual torch::Tensor embedDecoderIdsAt(const torch::Tensor& ids, int64_t start) {
    (void)start;
    return embedDecoderIds(ids);
  }
  /// x: [B, Tt, C] -> [B, Tt, C]: self-attention (ctx.mask, ctx.buffers), cross-attention over
  /// ctx.context (ctx.crossMask, ctx.crossBuffers) and the feed-forward block.
  virtual torch::Tensor decoderLayer(int index, const torch::Tensor& x, LayerContext& ctx);
  /// After the decoder's last layer. Default: unchanged.
  virtual torch::Tensor decoderFinalNorm(const torch::Tensor& x) { return x; }

  /// Serialises runs (which may move the modules between devices) and training that shares them.
  virtual std::mutex& mutex() { return m_mutex; }

 private:
  std::mutex m_mutex;
};

}  // namespace attnscope
