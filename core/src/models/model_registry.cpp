// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/model_registry.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>

#include "attnscope/error.h"
#include "attnscope/model_registry.h"
#include "io/file_io.h"
#include "io/strict_json.h"
#include "models/bert.h"
#include "models/checkpoint_folder.h"
#include "models/decoder_models.h"
#include "models/encoder_decoder_models.h"
#include "models/gpt2.h"
#include "runtime/batch_input.h"
#include "runtime/runtime_init.h"

namespace attnscope {
namespace {

using Opener =
    std::function<std::shared_ptr<Model>(const std::string& folder, const std::string& name)>;

struct Entry {
  Architecture architecture;
  Opener open;
};

/// The registry: one line per model_type. A new family adds its line here.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"gpt2", "gpt2", "GPT-2 (causal decoder: learned positions, fused q|k|v, GELU MLP)"},
       openGpt2Folder},
      {{"bert", "bert", "BERT (bidirectional encoder, post-norm, token types, masked-word head)"},
       openBertFolder},
      {{"roberta", "bert",
        "RoBERTa (BERT's layers, positions from padding_idx + 1, byte-level BPE)"},
       openRobertaFolder},
      {{"xlm-roberta", "bert",
        "XLM-RoBERTa (RoBERTa's layers and positions, a multilingual SentencePiece vocabulary)"},
       openRobertaFolder},
      {{"electra", "bert", "ELECTRA discriminator (BERT's layers, narrower embeddings projected)"},
       openElectraFolder},
      {{"distilbert", "distilbert",
        "DistilBERT (BERT's layer under q_lin/k_lin/v_lin/out_lin, no token types)"},
       openDistilBertFolder},
      {{"albert", "albert",
        "ALBERT (factorised embeddings, one layer group shared by every layer)"},
       openAlbertFolder},
      {{"modernbert", "modernbert",
        "ModernBERT (pre-norm, rotary with two bases, global and two-sided local windows, GeGLU)"},
       openModernBertFolder},
      {{"deberta-v2", "deberta",
        "DeBERTa v2/v3 (disentangled attention: content and relative-position terms, log buckets; "
        "v2-xlarge's ConvLayer)"},
       openDebertaFolder},
      {{"deberta", "deberta",
        "DeBERTa v1 (disentangled attention with a fused per-head in_proj, q/v biases, "
        "unbucketed relative positions)"},
       openDebertaFolder},
      {{"llama", "llama",
        "Llama 2/3, TinyLlama, SmolLM (RMSNorm, rotary, grouped-query heads, SwiGLU MLP)"},
       openLlamaFolder},
      {{"mistral", "llama", "Mistral (Llama's layers, sliding-window attention)"}, openLlamaFolder},
      {{"qwen2", "llama", "Qwen2, Qwen2.5 (Llama's layers, q/k/v biases)"}, openLlamaFolder},
      {{"qwen3", "llama", "Qwen3 (Llama's layers, per-head q/k RMSNorm before rotary)"},
       openLlamaFolder},
      {{"gemma", "llama",
        "Gemma (Llama's layers: GeGLU, (1 + w) RMSNorm, embeddings times sqrt(hidden), head_dim)"},
       openLlamaFolder},
      {{"gemma2", "gemma2",
        "Gemma 2 (Gemma's layers with norms after attention and MLP too, sliding-window and "
        "global layers alternating, soft-capped attention scores and logits)"},
       openGemma2Folder},
      {{"gemma3_text", "gemma2",
        "Gemma 3 text, Gemma 3 1B (Gemma 2's layers without soft-capping: per-head q/k RMSNorm, "
        "five local layers with their own rotary base to one global)"},
       openGemma2Folder},
      {{"gemma3", "gemma2",
        "Gemma 3 4B-27B (the text model of the vision-language folder; images are not shown)"},
       openGemma2Folder},
      {{"phi3", "phi3",
        "Phi-3, Phi-3.5, Phi-4-mini (Llama's layers with fused q|k|v and gate|up projections, "
        "LongRoPE short/long factors, partial rotary, sliding window where configured)"},
       openPhi3Folder},
      {{"olmo2", "olmo2",
        "OLMo 2 (post-norm layout: RMSNorm after attention and MLP, none before; q/k RMSNorm "
        "over the whole projection before the head split and rotary)"},
       openOlmo2Folder},
      {{"phi", "phi",
        "Phi-1, Phi-1.5, Phi-2 (parallel attention and MLP from one LayerNorm, partial rotary, "
        "biased q/k/v and dense, optional q/k LayerNorm over head_dim, lm_head with a bias)"},
       openPhiFolder},
      {{"stablelm", "stablelm",
        "StableLM-3B-4E1T, StableLM 2 (LayerNorm, partial rotary, SwiGLU; q/k/v biases, per-head "
        "q/k LayerNorm and the parallel residual where configured)"},
       openStableLmFolder},
      {{"olmo", "olmo",
        "OLMo 1 (Llama's layers with LayerNorms that have no weight or bias; q, k and v clamped "
        "with clip_qkv where configured)"},
       openOlmoFolder},
      {{"mixtral", "mixtral",
        "Mixtral 8x7B, 8x22B (Mistral's attention; a sparse mixture of experts: each token through "
        "its router's top 2 of 8 SwiGLU experts, weights renormalised)"},
       openMixtralFolder},
      {{"qwen2_moe", "mixtral",
        "Qwen1.5-MoE, Qwen2-MoE (Qwen2's attention with q/k/v biases; top-k of many experts, "
        "renormalised with norm_topk_prob, plus a shared expert gated by a sigmoid; dense layers "
        "from mlp_only_layers)"},
       openMixtralFolder},
      {{"qwen3_moe", "mixtral",
        "Qwen3-MoE (Qwen3's attention; top-k of many experts, renormalised with norm_topk_prob; "
        "dense layers from mlp_only_layers)"},
       openMixtralFolder},
      {{"olmoe", "mixtral",
        "OLMoE (Llama's pre-norm layers with OLMo 2's whole-projection q/k RMSNorm; top 8 of 64 "
        "experts, renormalised with norm_topk_prob)"},
       openMixtralFolder},
      {{"gpt_neox", "gpt_neox",
        "GPT-NeoX, Pythia (fused per-head q|k|v, partial rotary, parallel residual)"},
       openGptNeoxFolder},
      {{"bloom", "bloom", "Bloom (ALiBi position bias, embedding LayerNorm, fused q|k|v)"},
       openBloomFolder},
      {{"gptj", "gptj",
        "GPT-J (parallel attention and MLP, rotary on part of each head with neighbouring pairs)"},
       openGptjFolder},
      {{"opt", "opt",
        "OPT (learned positions offset by 2, ReLU MLP, pre- or post-LayerNorm, project_in/out)"},
       openOptFolder},
      {{"gpt_neo", "gpt_neo",
        "GPT-Neo (learned positions, alternating global and local-window layers, unscaled "
        "scores)"},
       openGptNeoFolder},
      {{"falcon", "falcon",
        "Falcon-7B/40B/180B, Falcon 2, Falcon-RW (fused q|k|v: multi-query, grouped or per head; "
        "parallel attention and MLP or sequential; rotary, or ALiBi scaled with the scores)"},
       openFalconFolder},
      {{"t5", "t5",
        "T5, T5 v1.1, Flan-T5 (encoder-decoder: relative position buckets, cross-attention, "
        "ReLU or gated-GELU feed-forward)"},
       openT5Folder},
      {{"mt5", "t5",
        "mT5 (T5 v1.1's layers: gated-GELU, untied head; a 250k SentencePiece vocabulary)"},
       openT5Folder},
      {{"bart", "bart",
        "BART (post-norm encoder-decoder: learned positions, embedding LayerNorm, "
        "cross-attention)"},
       openBartFolder},
      {{"marian", "bart",
        "Marian, Helsinki-NLP opus-mt (BART's layers, sinusoidal positions, source and target "
        "SentencePiece models)"},
       openMarianFolder},
  };
  return table;
}

}  // namespace

const std::vector<Architecture>& supportedArchitectures() {
  static const std::vector<Architecture> list = [] {
    std::vector<Architecture> out;
    for (const Entry& e : entries()) out.push_back(e.architecture);
    return out;
  }();
  return list;
}

const Architecture* findArchitecture(const std::string& modelType) {
  for (const Architecture& a : supportedArchitectures()) {
    if (a.modelType == modelType) return &a;
  }
  return nullptr;
}

std::string supportedModelTypes() {
  std::string out;
  for (const Architecture& a : supportedArchitectures())
    out += (out.empty() ? "" : ", ") + a.modelType;
  return out;
}

std::shared_ptr<Model> openModelFolder(const std::string& folder, const std::string& name,
                                       uint64_t memoryLimitBytes) {
  const std::string configPath = (std::filesystem::path(folder) / "config.json").string();
  // Malformed JSON says where (byte, line, column); duplicate keys are refused as everywhere.
  const nlohmann::json config = parseStrictJson(readFile(configPath, kMaxConfigBytes), configPath);
  if (!config.is_object()) throw Error(ErrorKind::Format, configPath + ": not a JSON object");
  // GPT-2 configs written before model_type existed have none.
  std::string modelType = "gpt2";
  if (config.contains("model_type")) {
    if (!config["model_type"].is_string())
      throw Error(ErrorKind::Format, configPath + ": \"model_type\" must be a string");
    modelType = config["model_type"].get<std::string>();
  }
  for (const Entry& e : entries()) {
    if (e.architecture.modelType != modelType) continue;
    checkWeightsFit(folder, name, memoryLimitBytes, availableMemoryBytes());
    return e.open(folder, name);
  }
  throw Error(ErrorKind::Format, configPath + ": model_type '" + modelType +
                                     "' is not supported; supported: " + supportedModelTypes());
}

}  // namespace attnscope
