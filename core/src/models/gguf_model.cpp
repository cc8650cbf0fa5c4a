// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "attnscope/error.h"

namespace attnscope {
namespace {

std::string megabytes(uint64_t bytes) { return std::to_string((bytes + 999999) / 1000000) + " MB"; }

[[noreturn]] void mappingError(const std::string& what) {
  throw Error(ErrorKind::Format, "gguf: " + what);
}

// blk.N.<name> -> model.layers.N.<Hugging Face name>, for the Llama family's layers.
const std::map<std::string, std::string>& llamaLayerNames() {
  static const std::map<std::string, std::string> names = {
      {"attn_norm", "input_layernorm"},    {"ffn_norm", "post_attention_layernorm"},
      {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  return names;
}

// The name of a tensor whose values became config.json fields (rope_scaling), not weights.
const char* const kFoldedIntoConfig = "(config)";

// The Hugging Face name of a GGUF tensor, or "" when the family has no place for it.
std::string hfName(const std::string& name) {
  if (name == "rope_freqs.weight") return kFoldedIntoConfig;
  static const std::map<std::string, std::string> top = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  if (const auto it = top.find(name); it != top.end()) return it->second;
  if (name.rfind("blk.", 0) != 0) return "";
  const std::size_t layerEnd = name.find('.', 4);
  const std::size_t kindEnd = layerEnd == std::string::npos ? layerEnd : name.rfind('.');
  if (layerEnd == std::string::npos || kindEnd <= layerEnd) return "";
  const std::string layer = name.substr(4, layerEnd - 4);
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos) return "";
  const std::string kind = name.substr(layerEnd + 1, kindEnd - layerEnd - 1);
  const std::string suffix = name.substr(kindEnd + 1);
  const auto it = llamaLayerNames().find(kind);
  if (it == llamaLayerNames().end() || (suffix != "weight" && suffix != "bias")) return "";
  return "model.layers." + layer + "." + it->second + "." + suffix;
}

class Hyper {
 public:
  Hyper(const GgufFile& file, std::string arch) : m_file(file), m_arch(std::move(arch)) {}

  bool has(const std::string& key) const { return m_file.find(m_arch + "." + key) != nullptr; }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi) const {
    const std::string full = m_arch + "." + key;
    const GgufValue* v = m_file.find(full);
    if (!v) mappingError("missing " + full);
    const std::optional<int64_t> i = v->integer();
    if (!i || *i < lo || *i > hi)
      mappingError(full + " must be an integer from " + std::to_string(lo) + " to " +
                   std::to_string(hi));
    return *i;
  }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) const {
    return has(key) ? integer(key, lo, hi) : fallback;
  }
  double number(const std::string& key, double fallback) const {
    const std::string full = m_arch + "." + key;
    const GgufValue* v = m_file.find(full);
    if (!v) return fallback;
    const std::optional<double> d = v->number();
    if (!d) mappingError(full + " must be a number");
    return *d;
  }
  std::string string(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = m_file.find(m_arch + "." + key);
    return v && v->string() ? *v->string() : fallback;
  }

 private:
  const GgufFile& m_file;
  std::string m_arch;
};

// Llama 3.1+ files hold the factors that divide each RoPE frequency (rope_freqs.weight, one per
// pair of dimensions), which convert_hf_to_gguf.py computed from config.json's llama3
// rope_scaling. Every published Llama 3.x uses low_freq_factor 1, high_freq_factor 4 and 8192
// original positions, and the largest factor is `factor` itself: those parameters are taken when
// they reproduce every stored factor, and anything else is refused rather than guessed.
nlohmann::json llama3Scaling(const GgufFile& file, const GgufTensorInfo& info, double theta,
                             int64_t headDim) {
  if (headDim < 2 || info.dims.size() != 1 || static_cast<int64_t>(info.dims[0]) * 2 != headDim)
    mappingError("tensor rope_freqs.weight must hold head_dim / 2 (" + std::to_string(headDim / 2) +
                 ") factors");
  const FloatTensor stored = file.readFloat(info.name);
  const double factor = *std::max_element(stored.data.begin(), stored.data.end());
  const double low = 1.0, high = 4.0, oldContext = 8192.0;
  bool same = factor >= 1.0;
  for (int64_t i = 0; same && i < headDim / 2; ++i) {
    // As the converter computes them (in double), from the pair's frequency and wavelength.
    const double freq = 1.0 / std::pow(theta, static_cast<double>(2 * i) / headDim);
    const double wavelen = 2.0 * M_PI / freq;
    double expected = factor;
    if (wavelen < oldContext / high) {
      expected = 1.0;
    } else if (wavelen <= oldContext / low) {
      const double smooth = (oldContext / wavelen - low) / (high - low);
      expected = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    same = std::fabs(stored.data[i] - expected) <= 1e-5 * expected;
  }
  if (!same)
    mappingError(
        "tensor rope_freqs.weight holds RoPE factors that are not Llama 3's scaling "
        "(factor " +
        std::to_string(factor) +
        ", low_freq_factor 1, high_freq_factor 4, 8192 original positions): not "
        "supported yet");
  return {{"rope_type", "llama3"},
          {"factor", factor},
          {"low_freq_factor", low},
          {"high_freq_factor", high},
          {"original_max_position_embeddings", static_cast<int64_t>(oldContext)}};
}

}  // namespace

std::string GgufModel::supportedArchitectures() { return "llama, qwen2, qwen3"; }

GgufModel::GgufModel(const GgufFile& file) : m_file(file) {
  const GgufValue* arch = file.find("general.architecture");
  if (!arch || !arch->string()) mappingError("general.architecture is missing");
  m_arch = *arch->string();
  if (m_arch != "llama" && m_arch != "qwen2" && m_arch != "qwen3")
    mappingError("architecture '" + m_arch +
                 "' is not supported yet; supported: " + supportedArchitectures());
  const Hyper h(file, m_arch);
  const GgufTensorInfo* embed = file.findTensor("token_embd.weight");
  if (!embed || embed->dims.size() != 2) mappingError("tensor token_embd.weight is missing");
  const int64_t heads = h.integer("attention.head_count", 1, 1024);
  const int64_t kvHeads = h.integer("attention.head_count_kv", 1, 1024, heads);
  const int64_t hidden = h.integer("embedding_length", 1, 1 << 16);
  nlohmann::json c = {
      {"model_type", m_arch},
      {"vocab_size", static_cast<int64_t>(embed->dims[1])},
      {"hidden_size", hidden},
      {"intermediate_size", h.integer("feed_forward_length", 1, 1 << 18)},
      {"num_hidden_layers", h.integer("block_count", 1, 1024)},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kvHeads},
      {"max_position_embeddings", h.integer("context_length", 1, 1 << 24, 2048)},
      {"rms_norm_eps", h.number("attention.layer_norm_rms_epsilon", 1e-6)},
      {"rope_theta", h.number("rope.freq_base", 10000.0)},
      {"tie_word_embeddings", file.findTensor("output.weight") == nullptr},
  };
  int64_t headDim = hidden % heads == 0 ? hidden / heads : 0;
  if (h.has("attention.key_length")) {
    headDim = h.integer("attention.key_length", 2, 4096);
    if (h.integer("attention.value_length", 2, 4096, headDim) != headDim)
      mappingError(m_arch + ".attention.value_length differs from key_length; the " + m_arch +
                   " family has one head size");
    c["head_dim"] = headDim;
  }
  if (h.integer("rope.dimension_count", 0, 1 << 16, headDim) != headDim)
    mappingError(m_arch + ".rope.dimension_count (" +
                 std::to_string(h.integer("rope.dimension_count", 0, 1 << 16)) +
                 ") differs from the head size (" + std::to_string(headDim) +
                 "): partial rotary is not supported for " + m_arch);
  const std::string scaling = h.string("rope.scaling.type", "none");
  if (scaling == "linear") {
    c["rope_scaling"] = {{"type", "linear"}, {"factor", h.number("rope.scaling.factor", 1.0)}};
  } else if (scaling != "none") {
    mappingError(m_arch + ".rope.scaling.type '" + scaling + "' is not supported yet");
  }
  if (const GgufTensorInfo* freqs = file.findTensor("rope_freqs.weight")) {
    if (c.contains("rope_scaling"))
      mappingError("tensor rope_freqs.weight and " + m_arch + ".rope.scaling.type both scale RoPE");
    c["rope_scaling"] = llama3Scaling(file, *freqs, c["rope_theta"].get<double>(), headDim);
  }
  m_config = std::move(c);

  // llama's converter permutes Q and K (weights and biases) for llama.cpp's interleaved rotary
  // layout; qwen2 and qwen3 are converted unpermuted (llama.cpp rotates them as NeoX does).
  const bool permuted = m_arch == "llama";
  for (const GgufTensorInfo& t : file.tensors()) {
    Tensor out;
    out.hfName = hfName(t.name);
    if (out.hfName.empty())
      mappingError("tensor " + t.name + " has no place in the " + m_arch + " family");
    if (out.hfName == kFoldedIntoConfig) continue;
    out.info = &t;
    if (permuted && out.hfName.find(".self_attn.q_proj.") != std::string::npos)
      out.permutedHeads = heads;
    if (permuted && out.hfName.find(".self_attn.k_proj.") != std::string::npos)
      out.permutedHeads = kvHeads;
    if (out.permutedHeads > 0) {
      const uint64_t rows = t.dims.size() == 1 ? t.dims[0] : t.rows();
      if (rows % static_cast<uint64_t>(2 * out.permutedHeads) != 0)
        mappingError("tensor " + t.name + " has " + std::to_string(rows) +
                     " rows, not a whole number of " + std::to_string(out.permutedHeads) +
                     " heads of rotary pairs");
    }
    m_tensors.push_back(std::move(out));
  }
}

uint64_t GgufModel::float32Bytes() const {
  uint64_t bytes = 0;
  for (const Tensor& t : m_tensors) bytes += t.info->columns() * t.info->rows() * 4;
  return bytes;
}

std::string GgufModel::float32Safetensors(uint64_t memoryLimitBytes) const {
  const uint64_t weights = float32Bytes();
  if (weights > memoryLimitBytes)
    throw Error(ErrorKind::ResourceLimit,
                "gguf: widening its weights to float32 needs " + megabytes(weights) +
                    ", more than the memory limit of " + megabytes(memoryLimitBytes) +
                    " (raise --memory-limit, or the limit in Settings)");
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const Tensor& t : m_tensors) {
    const uint64_t bytes = t.info->columns() * t.info->rows() * 4;
    header[t.hfName] = {
        {"dtype", "F32"}, {"shape", t.info->shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  json.append((8 - (8 + json.size()) % 8) % 8, ' ');  // float32 data 8-byte aligned
  std::string out(8 + json.size() + offset, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  std::memcpy(&out[8], json.data(), json.size());
  for (const Tensor& t : m_tensors) {
    const auto& offsets = header[t.hfName]["data_offsets"];
    float* dst = reinterpret_cast<float*>(&out[8 + json.size() + offsets[0].get<uint64_t>()]);
    const GgufTensorInfo& info = *t.info;
    if (t.permutedHeads == 0) {
      m_file.readRows(info, 0, info.rows(), dst);
      continue;
    }
    // The converter stored head h's rows [2, D/2] as [D/2, 2]: Hugging Face row h*D + j*D/2 + i
    // is GGUF row h*D + 2*i + j. A bias is one row of values, permuted the same way.
    const bool vector = info.dims.size() == 1;
    const uint64_t rows = vector ? info.dims[0] : info.rows();
    const uint64_t cols = vector ? 1 : info.columns();
    const uint64_t d = rows / static_cast<uint64_t>(t.permutedHeads);
    std::vector<float> source;
    if (vector) {
      source.resize(rows);
      m_file.readRows(info, 0, 1, source.data());
    }
    for (uint64_t r = 0; r < rows; ++r) {
      const uint64_t head = r / d, j = (r % d) / (d / 2), i = r % (d / 2);
      const uint64_t from = head * d + 2 * i + j;
      if (vector)
        dst[r] = source[from];
      else
        m_file.readRows(info, from, 1, dst + r * cols);
    }
  }
  return out;
}

}  // namespace attnscope
