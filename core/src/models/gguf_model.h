// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "io/gguf_file.h"

namespace attnscope {

/// A GGUF file's model in Hugging Face's terms, so the existing families open it unchanged:
/// llama.cpp's `general.architecture` and `{arch}.*` hyper-parameters become config.json's fields,
/// and its tensors (token_embd, blk.N.attn_q, ...) become float32 weights under the Hugging Face
/// names (model.embed_tokens, model.layers.N.self_attn.q_proj, ...), with the Q and K rows that
/// convert_hf_to_gguf.py permuted for llama.cpp's rotary layout put back. Architectures: llama
/// (Llama 2/3, Mistral, SmolLM, TinyLlama), qwen2, qwen3.
class GgufModel final {
 public:
  /// Throws Error(Format) naming what cannot be mapped: an unknown architecture, a missing or
  /// out-of-range hyper-parameter, a tensor attnscope has no place for, a RoPE variant the Llama
  /// family does not compute (rope_freqs factors, YaRN, partial rotary). The file must outlive
  /// the GgufModel.
  explicit GgufModel(const GgufFile& file);

  /// The general.architecture values it maps, for messages and `attnscope-cli models`:
  /// "llama, qwen2, qwen3".
  static std::string supportedArchitectures();

  /// config.json of the same model (model_type llama, qwen2 or qwen3).
  const nlohmann::json& config() const { return m_config; }
  /// What the float32 weights take: their elements times 4.
  uint64_t float32Bytes() const;
  /// The weights as one F32 safetensors file in memory (SafetensorsCheckpoint::fromMemory reads
  /// it), dequantized a row at a time. Throws Error(ResourceLimit) before allocating when they
  /// would exceed memoryLimitBytes, and what GgufFile::readRows throws for a type it cannot read.
  std::string float32Safetensors(uint64_t memoryLimitBytes) const;

 private:
  struct Tensor {
    std::string hfName;
    const GgufTensorInfo* info = nullptr;
    int64_t permutedHeads = 0;  // > 0: rows were permuted for this many heads (Q or K of llama)
  };

  const GgufFile& m_file;
  std::string m_arch;
  nlohmann::json m_config;
  std::vector<Tensor> m_tensors;
};

}  // namespace attnscope
