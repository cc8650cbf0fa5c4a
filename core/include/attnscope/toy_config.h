// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace attnscope {

enum class Variant { Fused, PerHead };
enum class MaskKind { None, Causal };
enum class ScaleKind { HeadSize, Embedding };  // 1/sqrt(head_size) or 1/sqrt(n_embd)
enum class TokenizerKind { Char, Word };

/// The configurable single attention layer with seeded random weights that teachers use to show
/// shapes. Field names follow the CLI flags.
struct ToyConfig {
  Variant variant = Variant::Fused;
  int inputDim = 64;  // width of the token embeddings fed in
  int dModel = 64;    // n_embd: width of q, k, v together and of the output
  int heads = 4;
  MaskKind mask = MaskKind::None;
  ScaleKind scale = ScaleKind::HeadSize;
  TokenizerKind tokenizer = TokenizerKind::Char;
  uint64_t seed = 0;

  int headSize() const { return heads > 0 ? dModel / heads : 0; }
  /// Throws Error(InvalidArgument) with a message naming the bad field.
  void validate() const;
  /// Bytes of the layer's float32 weights, from the configuration alone (nothing is built).
  uint64_t parameterBytes() const;
  /// Throws Error(ResourceLimit) "the toy layer's weights (...) need about 4.0 GiB, more than the
  /// memory limit of 1.0 GiB" before anything is allocated; validates first.
  void checkMemory(uint64_t limitBytes) const;
};

const char* toString(Variant v);        // "fused" | "per-head"
const char* toString(MaskKind m);       // "none" | "causal"
const char* toString(ScaleKind s);      // "head" | "embd"
const char* toString(TokenizerKind t);  // "char" | "word"
/// Parse the CLI/session spelling; throws Error(InvalidArgument) naming `what` on an unknown value.
Variant parseVariant(const std::string& s);
MaskKind parseMask(const std::string& s);
ScaleKind parseScale(const std::string& s);
TokenizerKind parseTokenizer(const std::string& s);

}  // namespace attnscope
