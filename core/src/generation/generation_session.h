// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "attnscope/generation.h"
#include "generation/layer_kv_cache.h"
#include "models/group_writer.h"
#include "models/transformer_family.h"

namespace attnscope {

/// Generation through a causal family's layers with a key/value cache (Model::startGeneration).
/// Each step runs the tokens not yet cached through every layer: the prompt (all but its last
/// token, keeping no attention) on the first step, then one token; the last of them writes its
/// attention row [L, 1, H, 1, T] through a GroupWriter. Positions, masks (sliding windows) and
/// ALiBi are offset by the cached length; the layers' scaledDotProduct appends to the cache
/// (AttentionBuffers::kvCache). The family's lock is held for a step, not between steps.
/// Encoder-decoders (T5, BART, Marian): the prompt is the source; the first step runs the
/// encoder over it once, and every step runs the decoder's newest input (the decoder start
/// token first) through the decoder layers, whose cross-attention projects the encoder's output
/// into keys and values on the first step and reads them from a second cache after.
class GenerationSession final : public Generation {
 public:
  /// Throws Error(InvalidArgument) for an empty prompt, a prompt past the model's positions or
  /// a model without a language-model head; Error(ResourceLimit) when the cache and the kept
  /// rows of request.maxNewTokens steps exceed request.limits.memoryLimitBytes.
  GenerationSession(std::shared_ptr<TransformerFamily> family, std::string modelName,
                    const GenerationRequest& request);

  const std::vector<Token>& tokens() const override { return m_tokens; }
  const std::vector<Token>& sourceTokens() const override { return m_source; }
  int promptLength() const override { return m_promptLength; }
  bool canStep() const override;
  GenerationStep step(const StepOptions& options) override;

  /// The keys and values and kept rows of a generation of `total` positions, in bytes (float32;
  /// grouped-query keys are cached repeated, one per query head). Encoder-decoders: layers are
  /// the decoder's, and `source` tokens add cross-attention's keys and values and rows.
  static uint64_t memoryBytes(const ModelInfo& mi, int64_t headDim, int64_t prompt, int64_t total,
                              bool keepAttention, int64_t source = 0);

 private:
  /// step() without the torch-error guard.
  GenerationStep stepUnguarded(const StepOptions& options);
  /// Runs tokens [start, start + n) through the (decoder's) layers with the cache; writer: where
  /// the last of them writes its attention ([L, 1, H, n, T]), or null; crossWriter likewise for
  /// cross-attention ([L, 1, H, n, T_source], encoder-decoders). -> [1, n, C] after the final
  /// norm.
  torch::Tensor forward(int64_t start, int64_t n, GroupWriter* writer, GroupWriter* crossWriter);
  /// Encoder-decoders: runs the encoder over the source into m_memory (once).
  void encodeSource();
  /// Moves the modules to the device and sets eval(), under the family's lock.
  void prepareModules();

  std::shared_ptr<TransformerFamily> m_family;
  std::string m_name;
  ModelInfo m_info;
  GenerationRequest m_request;
  RunRequest m_run;  // what LayerStack and GroupWriter read: the cancel flag, no scores
  torch::Device m_device = torch::kCPU;
  std::vector<Token> m_tokens;
  int m_promptLength = 0;
  int64_t m_vocabulary = 0;
  std::optional<int64_t> m_end;
  KvCache m_cache;
  // Encoder-decoders only:
  bool m_encoderDecoder = false;
  std::vector<Token> m_source;  // the encoder's input
  torch::Tensor m_memory;       // [1, T_source, C] the encoder's output, after the first step
  KvCache m_crossCache;         // cross-attention's keys and values of m_memory, per layer
  std::mt19937_64 m_rng;
  std::optional<uint64_t> m_seed;  // the seed m_rng was last seeded with
};

}  // namespace attnscope
