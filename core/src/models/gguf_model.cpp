// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <utility>

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

std::string GgufModel::fileTypeName(const GgufFile& file) {
  // llama.cpp's llama_ftype (general.file_type): what the converter or llama-quantize was asked
  // for. Gaps are values llama.cpp removed.
  static const std::map<int64_t, const char*> names = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"}};
  if (const GgufValue* v = file.find("general.file_type"); v && v->integer())
    if (const auto it = names.find(*v->integer()); it != names.end()) return it->second;
  // Named after the type holding most weights; of two alike, the one of more tensors, then the
  // lower type id.
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> byType;  // type -> {tensors, elements}
  for (const GgufTensorInfo& t : file.tensors()) {
    auto& [count, elements] = byType[t.type];
    ++count;
    elements += t.columns() * t.rows();
  }
  std::vector<std::pair<uint32_t, std::pair<uint64_t, uint64_t>>> types(byType.begin(),
                                                                        byType.end());
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const auto most = std::max_element(types.begin(), types.end(), [](const auto& a, const auto& b) {
    return a.second.second < b.second.second;
  });
  return most == types.end() ? std::string() : ggmlTypeName(most->first) + "-like";
}

std::string GgufModel::supportedArchitectures() { return "llama, qwen2, qwen3"; }

GgufModel::GgufModel(const GgufFile& file) : GgufModel(std::vector<const GgufFile*>{&file}) {}

GgufModel::GgufModel(std::vector<const GgufFile*> parts) : m_parts(std::move(parts)) {
  if (m_parts.empty()) mappingError("no file given");
  const GgufFile& file = *m_parts.front();
  // gguf-split's keys: split.no (from 0) in every part, split.count and split.tensors.count.
  uint64_t allTensors = 0;
  for (std::size_t i = 0; i < m_parts.size(); ++i) {
    allTensors += m_parts[i]->tensors().size();
    const GgufValue* no = m_parts[i]->find("split.no");
    const GgufValue* count = m_parts[i]->find("split.count");
    if (m_parts.size() == 1 && !count) break;  // a file of its own
    if (m_parts.size() == 1 && count->integer() && *count->integer() > 1) {
      char name[48];
      std::snprintf(name, sizeof name, "NAME-00001-of-%05lld.gguf",
                    static_cast<long long>(*count->integer() % 100000));
      mappingError("a part of a model split in " + std::to_string(*count->integer()) +
                   " files (split.count): open its first part under the name gguf-split gave it (" +
                   name + "), with the others beside it");
    }
    const std::string part =
        "part " + std::to_string(i + 1) + " of " + std::to_string(m_parts.size());
    if (!count || !count->integer() || *count->integer() != static_cast<int64_t>(m_parts.size()))
      mappingError(part + " of the split model does not say split.count " +
                   std::to_string(m_parts.size()));
    if (!no || !no->integer() || *no->integer() != static_cast<int64_t>(i))
      mappingError(part + " of the split model does not say split.no " + std::to_string(i));
  }
  if (m_parts.size() > 1) {
    const GgufValue* total = file.find("split.tensors.count");
    if (!total || !total->integer() || *total->integer() != static_cast<int64_t>(allTensors))
      mappingError("the split model's parts hold " + std::to_string(allTensors) +
                   " tensors, not the split.tensors.count of its first part");
  }
  // A tensor and the part that holds it.
  const auto findTensor = [&](const std::string& name) {
    for (const GgufFile* p : m_parts)
      if (const GgufTensorInfo* t = p->findTensor(name)) return std::make_pair(p, t);
    return std::pair<const GgufFile*, const GgufTensorInfo*>(nullptr, nullptr);
  };
  const GgufValue* arch = file.find("general.architecture");
  if (!arch || !arch->string()) mappingError("general.architecture is missing");
  m_arch = *arch->string();
  if (m_arch != "llama" && m_arch != "qwen2" && m_arch != "qwen3")
    mappingError("architecture '" + m_arch +
                 "' is not supported yet; supported: " + supportedArchitectures());
  const Hyper h(file, m_arch);
  const GgufTensorInfo* embed = findTensor("token_embd.weight").second;
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
      {"tie_word_embeddings", findTensor("output.weight").second == nullptr},
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
  if (const auto [freqsFile, freqs] = findTensor("rope_freqs.weight"); freqs) {
    if (c.contains("rope_scaling"))
      mappingError("tensor rope_freqs.weight and " + m_arch + ".rope.scaling.type both scale RoPE");
    c["rope_scaling"] = llama3Scaling(*freqsFile, *freqs, c["rope_theta"].get<double>(), headDim);
  }
  m_config = std::move(c);

  // llama's converter permutes Q and K (weights and biases) for llama.cpp's interleaved rotary
  // layout; qwen2 and qwen3 are converted unpermuted (llama.cpp rotates them as NeoX does).
  const bool permuted = m_arch == "llama";
  std::set<std::string> names;
  for (const GgufFile* part : m_parts)
    for (const GgufTensorInfo& t : part->tensors()) {
      if (!names.insert(t.name).second)
        mappingError("tensor " + t.name + " is in two parts of the split model");
      Tensor out;
      out.file = part;
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

uint64_t GgufModel::float32Bytes(bool vectorsOnly) const {
  uint64_t bytes = 0;
  for (const Tensor& t : m_tensors)
    if (!vectorsOnly || !t.matrix()) bytes += t.info->columns() * t.info->rows() * 4;
  return bytes;
}

uint64_t GgufModel::matrixFileBytes() const {
  uint64_t bytes = 0;
  for (const Tensor& t : m_tensors)
    if (t.matrix()) bytes += t.info->bytes;
  return bytes;
}

uint64_t GgufModel::layerFloat32Bytes() const {
  std::map<std::string, uint64_t> layers;  // "model.layers.N." -> float32 bytes of its matrices
  for (const Tensor& t : m_tensors) {
    const std::string prefix = "model.layers.";
    if (!t.matrix() || t.hfName.rfind(prefix, 0) != 0) continue;
    const std::size_t end = t.hfName.find('.', prefix.size());
    layers[t.hfName.substr(0, end)] += t.info->columns() * t.info->rows() * 4;
  }
  uint64_t largest = 0;
  for (const auto& [name, bytes] : layers) largest = std::max(largest, bytes);
  return largest;
}

std::string GgufModel::float32Safetensors(uint64_t memoryLimitBytes, bool vectorsOnly) const {
  const uint64_t weights = float32Bytes(vectorsOnly);
  if (weights > memoryLimitBytes)
    throw Error(ErrorKind::ResourceLimit,
                "gguf: widening its weights to float32 needs " + megabytes(weights) +
                    ", more than the memory limit of " + megabytes(memoryLimitBytes) +
                    " (raise --memory-limit, or the limit in Settings)");
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const Tensor& t : m_tensors) {
    if (vectorsOnly && t.matrix()) continue;
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
    if (vectorsOnly && t.matrix()) continue;
    const auto& offsets = header[t.hfName]["data_offsets"];
    float* dst = reinterpret_cast<float*>(&out[8 + json.size() + offsets[0].get<uint64_t>()]);
    const GgufTensorInfo& info = *t.info;
    if (t.permutedHeads == 0) {
      t.file->readRows(info, 0, info.rows(), dst);
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
      t.file->readRows(info, 0, 1, source.data());
    }
    for (uint64_t r = 0; r < rows; ++r) {
      const uint64_t head = r / d, j = (r % d) / (d / 2), i = r % (d / 2);
      const uint64_t from = head * d + 2 * i + j;
      if (vector)
        dst[r] = source[from];
      else
        t.file->readRows(info, from, 1, dst + r * cols);
    }
  }
  return out;
}

}  // namespace attnscope
