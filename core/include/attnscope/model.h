// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnscope/attention_result.h"
#include "attnscope/error.h"
#include "attnscope/generation.h"
#include "attnscope/head_ablation.h"
#include "attnscope/run_request.h"
#include "attnscope/safetensors.h"
#include "attnscope/token.h"

namespace attnscope {

/// What a front end needs to know about a model to offer valid choices.
struct ModelInfo {
  std::string kind;       // "toy" | "tiny-gpt" | a folder's model_type ("gpt2", "bert",
                          // "llama", "qwen3", "gpt_neox", "t5", ...; see model_registry.h)
  std::string name;       // shown to the user
  std::string variant;    // the layer's form, named in the trace and the pipeline view: "fused" |
                          // "per-head" (toy, tiny GPT) | "gpt2" | "encoder" (BERT-like) |
                          // "llama" | "gpt_neox" | "bloom" | the kind (encoder-decoders)
  int layers = 1;         // encoder-decoders: the encoder's layers
  int decoderLayers = 0;  // encoder-decoders: the decoder's layers; 0 for one stack
  int heads = 1;
  int kvHeads = 0;  // key/value heads (grouped-query: query head h reads kv head h / (heads /
                    // kvHeads)); 0 is read as `heads` (no sharing), see kvHeadsOrHeads()
  int dModel = 0;
  int maxPositions = 0;           // 0: no limit other than RunLimits::maxTokens
  int slidingWindow = 0;          // > 0: each query sees only this many most recent keys (Mistral)
  std::vector<int> layerWindows;  // per layer where windows differ by layer (Gemma 2/3's local and
                                  // global layers): that layer's window, 0 for a global layer;
                                  // empty when slidingWindow speaks for every layer. In an
                                  // encoder (causal false) a window w is two-sided: query i sees
                                  // keys |i - j| <= w / 2 (ModernBERT's local_attention)
  double attentionSoftcap = 0;    // > 0: scores are softcap·tanh(scores / softcap) before the
                                  // mask (Gemma 2): the scores kept and shown are the capped ones
  bool causal = false;
  bool supportsContext = false;  // cross-attention
  bool supportsRandomInput = false;
  bool supportsPair = false;  // sentence pairs (encoders with a pair template)
  std::string maskToken;      // "[MASK]", "<mask>" when the model can fill masks; empty otherwise
  uint64_t parameterBytes = 0;
  uint64_t mappedBytes = 0;   // of parameterBytes, pages of memory-mapped weight files: the kernel
                              // drops and re-reads them as needed, so runs do not count them
  std::string weightDtype;    // "F32", "F16", "BF16", or "mixed": the parameters as held
  std::string fileSummary;    // what the file held when it differs from the parameters (GGUF:
                              // "GGUF Q4_K_M: 113 Q4_K, 17 Q6_K, 65 F32 tensors, 0.8 GB;
                              // kept quantized, dequantized per layer as it runs");
                              // empty otherwise
  uint64_t widenedBytes = 0;  // float32 bytes of the parameters that are not float32: what
                              // RunLimits::weightCacheBytes would need to keep them all
  uint64_t weightCacheBytes = 0;        // float32 copies held now (RunLimits::weightCacheBytes)
  bool supportsValueNorms = false;      // run() accepts RunRequest::keepValueNorms
  std::vector<std::string> scoreTerms;  // the terms the pre-softmax scores are the sum of, when
                                        // the model can return them (RunRequest::keepScoreTerms):
                                        // DeBERTa's "c2c", "c2p", "p2c"; empty for other models

  /// Two stacks: encoder self-attention, decoder self-attention and cross-attention
  /// (RunRequest::target and ::generate).
  bool encoderDecoder() const { return decoderLayers > 0; }
  /// The number of key/value heads, `heads` when the family shares none.
  int kvHeadsOrHeads() const { return kvHeads > 0 ? kvHeads : heads; }
};

/// A transformer whose attention can be inspected. Implementations keep their torch state private,
/// so this interface carries only plain types. run() is const and safe to call from a worker thread
/// while another thread reads info().
class Model {
 public:
  virtual ~Model() = default;
  virtual ModelInfo info() const = 0;
  virtual std::vector<Token> tokenize(const std::string& text) const = 0;
  /// Throws Error: InvalidArgument for bad input, ResourceLimit before allocating too much,
  /// Unavailable for a missing device, Cancelled when request.cancel was set.
  virtual AttentionResult run(const RunRequest& request) const = 0;
  /// What run(request) would need, from the configuration and the tokens alone; the run refuses
  /// when its total is over request.limits.memoryLimitBytes. Throws like run() for bad input.
  /// A model that cannot say returns an estimate with total 0.
  virtual MemoryEstimate estimate(const RunRequest& request) const {
    (void)request;
    return {};
  }
  /// Every parameter under its PyTorch state-dict name, as float32 on the CPU.
  virtual std::vector<NamedTensor> parameters() const = 0;
  /// Each head's effect on the model's top prediction for request.run's first text, exact or
  /// estimated (see HeadAblation). Throws like run(), and InvalidArgument for a model that
  /// predicts nothing (no language-model head, or an encoder's text without a mask token).
  virtual HeadAblation ablateHeads(const AblationRequest& request) const {
    (void)request;
    throw Error(ErrorKind::InvalidArgument, info().name + " cannot ablate heads");
  }
  /// Step-by-step generation after request.text with a key/value cache (causal language models):
  /// each step costs one token's forward. Throws Error(InvalidArgument) for a model that cannot
  /// (an encoder, an encoder-decoder so far, a family without a cache, no language-model head)
  /// or an empty prompt, Error(ResourceLimit) past the positions or the memory limit.
  virtual std::unique_ptr<Generation> startGeneration(const GenerationRequest& request) const {
    (void)request;
    throw Error(ErrorKind::InvalidArgument, info().name + " cannot generate step by step");
  }
};

struct ToyConfig;
/// The seeded single-layer model of the textbook and the tutorial. Validates the config.
std::shared_ptr<Model> makeToyModel(const ToyConfig& config);
/// The same layer with given weights (a PyTorch state dict saved as safetensors, say). Throws
/// Error(Format) naming a missing, unexpected or wrongly shaped tensor.
std::shared_ptr<Model> makeToyModel(const ToyConfig& config,
                                    const std::vector<NamedTensor>& weights);

}  // namespace attnscope
