// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/model.h"

namespace attnscope {

/// The chapter's character-level GPT: token + position embeddings, n_layer pre-LayerNorm blocks of
/// per-head causal self-attention and a ReLU feed-forward layer, final LayerNorm, lm_head.
struct TinyGptConfig {
  int nLayer = 4;
  int nHead = 4;
  int nEmbd = 64;
  int blockSize = 128;
  int vocabSize = 0;  // set from the vocabulary
  /// Throws Error(InvalidArgument) naming the bad field.
  void validate() const;
  /// "n_layer 4, n_head 4, n_embd 64, block_size 128, vocab_size 65", for messages.
  std::string describe() const;
};

/// A tiny GPT with its character vocabulary. Cheap to copy (shared state). Checkpoints are
/// safetensors files whose __metadata__ holds "attnscope.kind" = "tiny-gpt", "attnscope.config"
/// (JSON of n_layer, n_head, n_embd, block_size, vocab_size) and "attnscope.vocab" (JSON array of
/// the characters in id order). Loading never runs code.
class TinyGpt {
 public:
  /// Fresh weights from a seed. vocab: the characters in id order (sorted code points).
  static TinyGpt create(const TinyGptConfig& config, std::vector<std::string> vocab, uint64_t seed);
  /// Throws Error(Io) when unreadable, Error(Format) naming the problem when malformed.
  static TinyGpt load(const std::string& path);
  /// "default" (the bundled model, see defaultModelPath) or a checkpoint path. Throws like load,
  /// or Error(Unavailable) when the bundled model is missing.
  static TinyGpt open(const std::string& source);
  /// The characters of a text in sorted code-point order: the chapter's vocabulary.
  static std::vector<std::string> vocabularyOf(const std::string& text);

  void save(const std::string& path) const;
  const TinyGptConfig& config() const;
  const std::vector<std::string>& vocab() const;
  /// A Model view for the views and the CLI; it shares these weights, so it sees later training.
  std::shared_ptr<Model> asModel(const std::string& name = "tiny-gpt") const;
  /// An independent copy of the weights (a snapshot while training goes on).
  TinyGpt clone() const;

  /// Mean next-character cross-entropy in nats over non-overlapping block_size windows of text
  /// (at most maxWindows of them, evenly spread). Characters outside the vocabulary are skipped.
  double validationLoss(const std::string& text, int maxWindows = 0) const;
  /// Generates `tokens` characters after the prompt (multinomial sampling, seeded).
  std::string sample(const std::string& prompt, int tokens, uint64_t seed) const;

  struct State;
  explicit TinyGpt(std::shared_ptr<State> state);
  const std::shared_ptr<State>& state() const { return m_state; }

 private:
  std::shared_ptr<State> m_state;
};

/// Where the bundled default model lives: $ATTNSCOPE_DEFAULT_MODEL, then the installed share
/// folder next to the executable, then the source tree. Empty when none exists.
std::string defaultModelPath();

}  // namespace attnscope
