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
/// convert_hf_to_gguf.py permuted for llama.cpp's rotary layout put back, GPT-NeoX's and BLOOM's
/// fused query_key_value regrouped per head again, GPT-2's Conv1D weights transposed back and the 1
/// the Gemma converters add to every norm weight taken off again.
/// Architectures: llama (Llama 2/3, Mistral, SmolLM, TinyLlama), qwen2, qwen3, gemma (the Llama
/// family), gemma2 and gemma3 (the Gemma 2 family), phi3, gpt2, gptneox, bloom and bert (their own
/// families).
class GgufModel final {
 public:
  /// Throws Error(Format) naming what cannot be mapped: an unknown architecture, a missing or
  /// out-of-range hyper-parameter, a tensor attnscope has no place for, a RoPE variant the Llama
  /// family does not compute (rope_freqs factors, YaRN, partial rotary). The file must outlive
  /// the GgufModel.
  explicit GgufModel(const GgufFile& file);
  /// A model split in parts (llama.cpp's gguf-split: NAME-00001-of-00003.gguf, ...), given in
  /// order: the first holds the metadata, each a share of the tensors. Throws Error(Format) as
  /// above, and when split.no / split.count / split.tensors.count disagree with the parts given
  /// or a tensor is in two parts. The parts must outlive the GgufModel.
  explicit GgufModel(std::vector<const GgufFile*> parts);

  /// The general.architecture values it maps, for messages and `attnscope-cli models`:
  /// "llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gpt2, gptneox, bloom, bert".
  static std::string supportedArchitectures();
  /// general.file_type's name ("Q4_K_M", llama.cpp's llama_ftype); for a file without one, the
  /// type holding most weights ("Q8_0-like"); "" for a file without tensors.
  static std::string fileTypeName(const GgufFile& file);

  /// One weight: its Hugging Face name and where it is in the file.
  struct Tensor {
    std::string hfName;
    const GgufTensorInfo* info = nullptr;
    const GgufFile* file = nullptr;  // the part holding it
    int64_t permutedHeads = 0;  // > 0: rows were permuted for this many heads (Q or K of llama)
    int64_t qkvHeads = 0;  // > 0: a fused QKV of this many heads regrouped as Q, K, V (NeoX, BLOOM)
    bool transposed = false;  // the family's parameter is [columns, rows] (GPT-2's Conv1D)
    float normShift = 0;      // added by the converter to each value (Gemma's norms: 1): undone
    /// A matrix (embeddings, a projection, the head): kept as the file's blocks and dequantized
    /// while a layer uses it, when a model is opened packed. Vectors (norms, biases) are widened.
    bool matrix() const { return info->dims.size() == 2; }
  };

  /// config.json of the same model (model_type llama, qwen2, qwen3, gemma, gemma2, gemma3_text,
  /// phi3, gpt2, gpt_neox, bloom, bert).
  const nlohmann::json& config() const { return m_config; }
  /// The weights that map to the family's parameters, in file order.
  const std::vector<Tensor>& tensors() const { return m_tensors; }
  /// What the float32 weights take: their elements times 4 (only the vectors' with
  /// vectorsOnly).
  uint64_t float32Bytes(bool vectorsOnly = false) const;
  /// The file bytes of the matrices, kept as they are when opened packed.
  uint64_t matrixFileBytes() const;
  /// The float32 bytes of the largest layer's matrices (blk.N.*): what dequantizing one layer's
  /// weights at a time needs at most.
  uint64_t layerFloat32Bytes() const;
  /// The weights as one F32 safetensors file in memory (SafetensorsCheckpoint::fromMemory reads
  /// it), dequantized a row at a time; with vectorsOnly, only the vectors (the matrices are then
  /// kept packed). Throws Error(ResourceLimit) before allocating when they would exceed
  /// memoryLimitBytes, and what GgufFile::readRows throws for a type it cannot read.
  std::string float32Safetensors(uint64_t memoryLimitBytes, bool vectorsOnly = false) const;

 private:
  std::vector<const GgufFile*> m_parts;  // one, or a split model's parts in order
  std::string m_arch;
  nlohmann::json m_config;
  std::vector<Tensor> m_tensors;
};

}  // namespace attnscope
