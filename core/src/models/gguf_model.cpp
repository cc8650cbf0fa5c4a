// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "attnscope/error.h"
#include "nn/row_order.h"

namespace attnscope {
namespace {

std::string megabytes(uint64_t bytes) { return std::to_string((bytes + 999999) / 1000000) + " MB"; }

[[noreturn]] void mappingError(const std::string& what) {
  throw Error(ErrorKind::Format, "gguf: " + what);
}

// The name of a tensor whose values became config.json fields (rope_scaling), not weights.
const char* const kFoldedIntoConfig = "(config)";
// The name of a tensor the converter wrote as a copy of another (GPT-2's and BLOOM's tied head).
const char* const kTiedCopy = "(tied)";

// How one general.architecture's tensors are named in Hugging Face's checkpoints: blk.N.<kind>
// -> layerPrefix + N + "." + layer[kind], the others by `top`.
struct ArchNames {
  std::map<std::string, std::string> top;
  std::string layerPrefix;
  std::map<std::string, std::string> layer;
};

const ArchNames& archNames(const std::string& arch) {
  static const ArchNames llama{
      {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}},
      "model.layers.",
      {{"attn_norm", "input_layernorm"},
       {"ffn_norm", "post_attention_layernorm"},
       {"attn_q", "self_attn.q_proj"},
       {"attn_k", "self_attn.k_proj"},
       {"attn_v", "self_attn.v_proj"},
       {"attn_output", "self_attn.o_proj"},
       {"attn_q_norm", "self_attn.q_norm"},
       {"attn_k_norm", "self_attn.k_norm"},
       {"ffn_gate", "mlp.gate_proj"},
       {"ffn_up", "mlp.up_proj"},
       {"ffn_down", "mlp.down_proj"}}};
  // GPT2LMHeadModel without its "transformer." prefix; the converter writes the tied head again
  // as output.weight (llama.cpp had no tied head then).
  static const ArchNames gpt2{{{"token_embd", "wte"},
                               {"position_embd", "wpe"},
                               {"output_norm", "ln_f"},
                               {"output", kTiedCopy}},
                              "h.",
                              {{"attn_norm", "ln_1"},
                               {"attn_qkv", "attn.c_attn"},
                               {"attn_output", "attn.c_proj"},
                               {"ffn_norm", "ln_2"},
                               {"ffn_up", "mlp.c_fc"},
                               {"ffn_down", "mlp.c_proj"}}};
  static const ArchNames gptneox{{{"token_embd", "gpt_neox.embed_in"},
                                  {"output_norm", "gpt_neox.final_layer_norm"},
                                  {"output", "embed_out"}},
                                 "gpt_neox.layers.",
                                 {{"attn_norm", "input_layernorm"},
                                  {"ffn_norm", "post_attention_layernorm"},
                                  {"attn_qkv", "attention.query_key_value"},
                                  {"attn_output", "attention.dense"},
                                  {"ffn_up", "mlp.dense_h_to_4h"},
                                  {"ffn_down", "mlp.dense_4h_to_h"}}};
  // BloomForCausalLM without "transformer."; output.weight is the tied head written again.
  static const ArchNames bloom{{{"token_embd", "word_embeddings"},
                                {"token_embd_norm", "word_embeddings_layernorm"},
                                {"output_norm", "ln_f"},
                                {"output", kTiedCopy}},
                               "h.",
                               {{"attn_norm", "input_layernorm"},
                                {"attn_qkv", "self_attention.query_key_value"},
                                {"attn_output", "self_attention.dense"},
                                {"ffn_norm", "post_attention_layernorm"},
                                {"ffn_up", "mlp.dense_h_to_4h"},
                                {"ffn_down", "mlp.dense_4h_to_h"}}};
  // BertModel without "bert."; the converter drops the pooler and the masked-LM head.
  static const ArchNames bert{{{"token_embd", "embeddings.word_embeddings"},
                               {"position_embd", "embeddings.position_embeddings"},
                               {"token_types", "embeddings.token_type_embeddings"},
                               {"token_embd_norm", "embeddings.LayerNorm"}},
                              "encoder.layer.",
                              {{"attn_q", "attention.self.query"},
                               {"attn_k", "attention.self.key"},
                               {"attn_v", "attention.self.value"},
                               {"attn_output", "attention.output.dense"},
                               {"attn_output_norm", "attention.output.LayerNorm"},
                               {"ffn_up", "intermediate.dense"},
                               {"ffn_down", "output.dense"},
                               {"layer_output_norm", "output.LayerNorm"}}};
  // Gemma 2 and 3: a norm after the attention and after the MLP as well as before them; llama.cpp's
  // ffn_norm is the one before the MLP (Hugging Face's pre_feedforward_layernorm), its
  // post_attention_norm Hugging Face's post_attention_layernorm.
  static const ArchNames gemma2{
      {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}},
      "model.layers.",
      {{"attn_norm", "input_layernorm"},
       {"post_attention_norm", "post_attention_layernorm"},
       {"ffn_norm", "pre_feedforward_layernorm"},
       {"post_ffw_norm", "post_feedforward_layernorm"},
       {"attn_q", "self_attn.q_proj"},
       {"attn_k", "self_attn.k_proj"},
       {"attn_v", "self_attn.v_proj"},
       {"attn_output", "self_attn.o_proj"},
       {"attn_q_norm", "self_attn.q_norm"},
       {"attn_k_norm", "self_attn.k_norm"},
       {"ffn_gate", "mlp.gate_proj"},
       {"ffn_up", "mlp.up_proj"},
       {"ffn_down", "mlp.down_proj"}}};
  // Phi-3: the fused projections keep Hugging Face's layout (attn_qkv is qkv_proj, ffn_up is
  // gate_up_proj, gate first); LongRoPE's factors become config.json's rope_scaling.
  static const ArchNames phi3{{{"token_embd", "model.embed_tokens"},
                               {"output_norm", "model.norm"},
                               {"output", "lm_head"},
                               {"rope_factors_long", kFoldedIntoConfig},
                               {"rope_factors_short", kFoldedIntoConfig}},
                              "model.layers.",
                              {{"attn_norm", "input_layernorm"},
                               {"attn_qkv", "self_attn.qkv_proj"},
                               {"attn_output", "self_attn.o_proj"},
                               {"ffn_norm", "post_attention_layernorm"},
                               {"ffn_up", "mlp.gate_up_proj"},
                               {"ffn_down", "mlp.down_proj"}}};
  if (arch == "gemma2" || arch == "gemma3") return gemma2;
  if (arch == "phi3") return phi3;
  if (arch == "gpt2") return gpt2;
  if (arch == "gptneox") return gptneox;
  if (arch == "bloom") return bloom;
  if (arch == "bert") return bert;
  return llama;  // llama, qwen2, qwen3, gemma
}

// The Hugging Face name of a GGUF tensor, or "" when the family has no place for it.
std::string hfName(const std::string& arch, const std::string& name) {
  const ArchNames& names = archNames(arch);
  if (name == "rope_freqs.weight" && &names == &archNames("llama")) return kFoldedIntoConfig;
  const std::size_t kindEnd = name.rfind('.');
  if (kindEnd == std::string::npos) return "";
  const std::string suffix = name.substr(kindEnd + 1);
  if (suffix != "weight" && suffix != "bias") return "";
  if (const auto it = names.top.find(name.substr(0, kindEnd)); it != names.top.end())
    return it->second == kTiedCopy || it->second == kFoldedIntoConfig ? it->second
                                                                      : it->second + "." + suffix;
  if (name.rfind("blk.", 0) != 0) return "";
  const std::size_t layerEnd = name.find('.', 4);
  if (layerEnd == std::string::npos || kindEnd <= layerEnd) return "";
  const std::string layer = name.substr(4, layerEnd - 4);
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos) return "";
  const std::string kind = name.substr(layerEnd + 1, kindEnd - layerEnd - 1);
  const auto it = names.layer.find(kind);
  if (it == names.layer.end()) return "";
  return names.layerPrefix + layer + "." + it->second + "." + suffix;
}

class Hyper {
 public:
  Hyper(const GgufFile& file, std::string arch) : m_file(file), m_arch(std::move(arch)) {}

  const std::string& arch() const { return m_arch; }
  bool flag(const std::string& key, bool fallback) const {
    const GgufValue* v = m_file.find(m_arch + "." + key);
    if (!v) return fallback;
    const std::optional<int64_t> i = v->integer();
    if (!i) mappingError(m_arch + "." + key + " must be a bool");
    return *i != 0;
  }

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

// A tensor and the part that holds it (nullptrs when no part does).
using TensorFinder =
    std::function<std::pair<const GgufFile*, const GgufTensorInfo*>(const std::string&)>;

// config.json of a llama, qwen2, qwen3 or gemma file (Gemma's head_dim is its key_length).
nlohmann::json llamaConfig(const Hyper& h, const GgufTensorInfo& embed,
                           const TensorFinder& findTensor) {
  const std::string& arch = h.arch();
  const int64_t heads = h.integer("attention.head_count", 1, 1024);
  const int64_t hidden = h.integer("embedding_length", 1, 1 << 16);
  nlohmann::json c = {
      {"model_type", arch},
      {"vocab_size", static_cast<int64_t>(embed.dims[1])},
      {"hidden_size", hidden},
      {"intermediate_size", h.integer("feed_forward_length", 1, 1 << 18)},
      {"num_hidden_layers", h.integer("block_count", 1, 1024)},
      {"num_attention_heads", heads},
      {"num_key_value_heads", h.integer("attention.head_count_kv", 1, 1024, heads)},
      {"max_position_embeddings", h.integer("context_length", 1, 1 << 24, 2048)},
      {"rms_norm_eps", h.number("attention.layer_norm_rms_epsilon", 1e-6)},
      {"rope_theta", h.number("rope.freq_base", 10000.0)},
      {"tie_word_embeddings", findTensor("output.weight").second == nullptr},
  };
  int64_t headDim = hidden % heads == 0 ? hidden / heads : 0;
  if (h.has("attention.key_length")) {
    headDim = h.integer("attention.key_length", 2, 4096);
    if (h.integer("attention.value_length", 2, 4096, headDim) != headDim)
      mappingError(arch + ".attention.value_length differs from key_length; the " + arch +
                   " family has one head size");
    c["head_dim"] = headDim;
  }
  if (h.integer("rope.dimension_count", 0, 1 << 16, headDim) != headDim)
    mappingError(arch + ".rope.dimension_count (" +
                 std::to_string(h.integer("rope.dimension_count", 0, 1 << 16)) +
                 ") differs from the head size (" + std::to_string(headDim) +
                 "): partial rotary is not supported for " + arch);
  const std::string scaling = h.string("rope.scaling.type", "none");
  if (scaling == "linear") {
    c["rope_scaling"] = {{"type", "linear"}, {"factor", h.number("rope.scaling.factor", 1.0)}};
  } else if (scaling != "none") {
    mappingError(arch + ".rope.scaling.type '" + scaling + "' is not supported yet");
  }
  if (const auto [freqsFile, freqs] = findTensor("rope_freqs.weight"); freqs) {
    if (c.contains("rope_scaling"))
      mappingError("tensor rope_freqs.weight and " + arch + ".rope.scaling.type both scale RoPE");
    c["rope_scaling"] = llama3Scaling(*freqsFile, *freqs, c["rope_theta"].get<double>(), headDim);
  }
  return c;
}

// The head size of a Llama-like file: attention.key_length (value_length the same), else
// embedding_length / head_count as llama.cpp takes it; the rotary dimensions must be all of it.
int64_t headSize(const Hyper& h, int64_t hidden, int64_t heads) {
  const std::string& arch = h.arch();
  int64_t headDim = hidden % heads == 0 ? hidden / heads : 0;
  if (h.has("attention.key_length")) headDim = h.integer("attention.key_length", 2, 4096);
  if (headDim == 0)
    mappingError("missing " + arch + ".attention.key_length (head_count does not divide " +
                 "embedding_length)");
  if (h.integer("attention.value_length", 2, 4096, headDim) != headDim)
    mappingError(arch + ".attention.value_length differs from key_length; the " + arch +
                 " family has one head size");
  return headDim;
}

// config.json of a gemma2 or gemma3 file (model_type gemma2, gemma3_text). What the converters do
// not write takes llama.cpp's value, which is every published model's: the scores scale
// (query_pre_attn_scalar) is hidden / heads for the 27B models (gemma2's 46 layers, gemma3's
// 62) and head_dim for the others; the local layers are Gemma 2's even ones and all but every
// sixth for Gemma 3 (attention.sliding_window_pattern when the file has it); Gemma 3's local
// layers rotate with base 10000 (rope.freq_base_swa when given), unscaled.
nlohmann::json gemma2Config(const Hyper& h, const GgufTensorInfo& embed,
                            const TensorFinder& findTensor, const GgufFile& file) {
  const std::string& arch = h.arch();
  const bool gemma3 = arch == "gemma3";
  const int64_t heads = h.integer("attention.head_count", 1, 1024);
  const int64_t hidden = h.integer("embedding_length", 1, 1 << 16);
  const int64_t layers = h.integer("block_count", 1, 1024);
  const int64_t headDim = headSize(h, hidden, heads);
  if (h.integer("rope.dimension_count", 0, 1 << 16, headDim) != headDim)
    mappingError(arch + ".rope.dimension_count differs from the head size (" +
                 std::to_string(headDim) + "): Gemma rotates every dimension");
  const bool big = layers == (gemma3 ? 62 : 46) && hidden % heads == 0;
  nlohmann::json c = {
      {"model_type", gemma3 ? "gemma3_text" : "gemma2"},
      {"vocab_size", static_cast<int64_t>(embed.dims[1])},
      {"hidden_size", hidden},
      {"intermediate_size", h.integer("feed_forward_length", 1, 1 << 18)},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", h.integer("attention.head_count_kv", 1, 1024, heads)},
      {"head_dim", headDim},
      {"max_position_embeddings", h.integer("context_length", 1, 1 << 24, gemma3 ? 131072 : 8192)},
      {"rms_norm_eps", h.number("attention.layer_norm_rms_epsilon", 1e-6)},
      {"rope_theta", h.number("rope.freq_base", gemma3 ? 1e6 : 10000.0)},
      {"query_pre_attn_scalar", big ? hidden / heads : headDim},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"tie_word_embeddings", findTensor("output.weight").second == nullptr},
  };
  // Soft caps: Gemma 2's converter always writes them (llama.cpp's defaults 50 and 30 otherwise);
  // Gemma 3 has none unless the file says so. 0 means none.
  const std::pair<std::string, double> caps[] = {{"attn_logit_softcapping", 50.0},
                                                 {"final_logit_softcapping", 30.0}};
  for (const auto& [key, fallback] : caps) {
    const double cap = h.number(key, gemma3 ? 0.0 : fallback);
    c[key] = cap > 0 ? nlohmann::json(cap) : nlohmann::json(nullptr);
  }
  // The window: Gemma 2's default 4096 (llama.cpp's); Gemma 3 without one has no local layers.
  const int64_t window = h.integer("attention.sliding_window", 0, 1 << 24, gemma3 ? 0 : 4096);
  c["sliding_window"] = window > 0 ? nlohmann::json(window) : nlohmann::json(nullptr);
  std::vector<std::string> types;
  const GgufValue* pattern = file.find(arch + ".attention.sliding_window_pattern");
  for (int64_t i = 0; i < layers; ++i) {
    bool local = gemma3 ? (i + 1) % 6 != 0 : i % 2 == 0;
    if (pattern && pattern->isArray()) {  // one bool per layer: true for a local layer
      if (pattern->count != static_cast<uint64_t>(layers) || !pattern->integerAt(i))
        mappingError(arch + ".attention.sliding_window_pattern must hold one bool per layer (" +
                     std::to_string(layers) + ")");
      local = *pattern->integerAt(i) != 0;
    } else if (pattern) {  // every n-th layer global: n - 1 local ones, then a global one
      const std::optional<int64_t> n = pattern->integer();
      if (!n || *n < 1 || *n > 1024)
        mappingError(arch + ".attention.sliding_window_pattern must be an integer from 1 to 1024");
      local = (i + 1) % *n != 0;
    }
    types.push_back(local ? "sliding_attention" : "full_attention");
  }
  c["layer_types"] = types;
  if (gemma3) c["rope_local_base_freq"] = h.number("rope.freq_base_swa", 10000.0);
  const std::string scaling = h.string("rope.scaling.type", "none");
  if (scaling == "linear")
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", h.number("rope.scaling.factor", 1.0)}};
  else if (scaling != "none")
    mappingError(arch + ".rope.scaling.type '" + scaling + "' is not supported yet");
  return c;
}

// One LongRoPE factor list (rope_factors_long or _short): `n` positive numbers.
std::vector<double> ropeFactors(const TensorFinder& findTensor, const std::string& name,
                                int64_t n) {
  const auto [file, info] = findTensor(name);
  if (!info || info->dims.size() != 1 || static_cast<int64_t>(info->dims[0]) != n)
    mappingError("tensor " + name + " must hold rope.dimension_count / 2 (" + std::to_string(n) +
                 ") factors");
  const FloatTensor stored = file->readFloat(info->name);
  std::vector<double> out(stored.data.begin(), stored.data.end());
  for (const double f : out)
    if (!(f > 0) || f > 1e9)
      mappingError("tensor " + name + " holds a factor that is not positive");
  return out;
}

// config.json of a phi3 file (Phi-3, Phi-3.5, Phi-4-mini). rope.dimension_count below the head
// size is Phi-4-mini's partial_rotary_factor; rope_factors_long / _short are LongRoPE's factors,
// with rope.scaling.original_context_length, and rope.scaling.attn_factor when it is not the one
// transformers computes from the two context lengths; sliding_window 0 is none.
nlohmann::json phi3Config(const Hyper& h, const GgufTensorInfo& embed,
                          const TensorFinder& findTensor) {
  const std::string& arch = h.arch();
  const int64_t heads = h.integer("attention.head_count", 1, 1024);
  const int64_t hidden = h.integer("embedding_length", 1, 1 << 16);
  if (hidden % heads != 0)
    mappingError(arch + ".attention.head_count does not divide " + arch + ".embedding_length");
  const int64_t headDim = hidden / heads;
  const int64_t rotary = h.integer("rope.dimension_count", 2, 1 << 16, headDim);
  if (rotary > headDim || rotary % 2 != 0)
    mappingError(arch + ".rope.dimension_count (" + std::to_string(rotary) +
                 ") must be even and at most the head size (" + std::to_string(headDim) + ")");
  const int64_t context = h.integer("context_length", 1, 1 << 24, 4096);
  const int64_t original = h.integer("rope.scaling.original_context_length", 1, 1 << 24, context);
  const int64_t window = h.integer("attention.sliding_window", 0, 1 << 24, 0);
  nlohmann::json c = {
      {"model_type", "phi3"},
      {"vocab_size", static_cast<int64_t>(embed.dims[1])},
      {"hidden_size", hidden},
      {"intermediate_size", h.integer("feed_forward_length", 1, 1 << 18)},
      {"num_hidden_layers", h.integer("block_count", 1, 1024)},
      {"num_attention_heads", heads},
      {"num_key_value_heads", h.integer("attention.head_count_kv", 1, 1024, heads)},
      {"max_position_embeddings", context},
      {"original_max_position_embeddings", original},
      {"rms_norm_eps", h.number("attention.layer_norm_rms_epsilon", 1e-5)},
      {"rope_theta", h.number("rope.freq_base", 10000.0)},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", findTensor("output.weight").second == nullptr},
      {"sliding_window", window > 0 ? nlohmann::json(window) : nlohmann::json(nullptr)},
  };
  if (rotary != headDim) {
    // Phi3's rotary covers int(head_dim * partial_rotary_factor) dimensions.
    double pct = static_cast<double>(rotary) / static_cast<double>(headDim);
    if (static_cast<int64_t>(static_cast<double>(headDim) * pct) != rotary)
      pct = std::nextafter(pct, 2.0);
    c["partial_rotary_factor"] = pct;
  }
  const bool hasLong = findTensor("rope_factors_long.weight").second != nullptr;
  if (hasLong != (findTensor("rope_factors_short.weight").second != nullptr))
    mappingError("tensors rope_factors_long.weight and rope_factors_short.weight come together");
  if (hasLong) {
    nlohmann::json s = {
        {"type", "longrope"},
        {"long_factor", ropeFactors(findTensor, "rope_factors_long.weight", rotary / 2)},
        {"short_factor", ropeFactors(findTensor, "rope_factors_short.weight", rotary / 2)}};
    // transformers' default: sqrt(1 + ln(scale) / ln(original)) for a stretched context, else 1
    // (what convert_hf_to_gguf.py writes, in float32).
    const double scale = static_cast<double>(context) / static_cast<double>(original);
    const double computed =
        scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(original)))
                    : 1.0;
    const double stored = h.number("rope.scaling.attn_factor", computed);
    if (std::fabs(stored - computed) > 1e-6 * computed) s["attention_factor"] = stored;
    c["rope_scaling"] = s;
  }
  return c;
}

// The rows of a table tensor (position_embd, token_types), or `fallback` when there is none.
int64_t tableRows(const TensorFinder& findTensor, const std::string& name, int64_t fallback) {
  const GgufTensorInfo* t = findTensor(name).second;
  if (!t) return fallback;
  if (t->dims.size() != 2) mappingError("tensor " + name + " must be a matrix");
  return static_cast<int64_t>(t->dims[1]);
}

// config.json of a gpt2, gptneox, bloom or bert file, as their converters read it (the inverse
// of convert_hf_to_gguf.py's set_gguf_parameters): the hyper-parameters llama.cpp does not
// store are the Hugging Face defaults of the models the converter takes.
nlohmann::json otherConfig(const Hyper& h, const GgufTensorInfo& embed,
                           const TensorFinder& findTensor) {
  const std::string& arch = h.arch();
  const int64_t vocab = static_cast<int64_t>(embed.dims[1]);
  const int64_t heads = h.integer("attention.head_count", 1, 1024);
  const int64_t hidden = h.integer("embedding_length", 1, 1 << 16);
  const int64_t layers = h.integer("block_count", 1, 1024);
  const int64_t inner = h.integer("feed_forward_length", 1, 1 << 18, 4 * hidden);
  const double eps = h.number("attention.layer_norm_epsilon", 1e-5);
  if (h.integer("attention.head_count_kv", 1, 1024, heads) != heads)
    mappingError(arch + ".attention.head_count_kv differs from head_count; the " + arch +
                 " family has one key and value head per query head");
  if (arch == "gpt2") {
    // llama.cpp computes GELU with the tanh approximation, as GPT-2's gelu_new does.
    return {{"model_type", "gpt2"},
            {"vocab_size", vocab},
            {"n_embd", hidden},
            {"n_layer", layers},
            {"n_head", heads},
            {"n_inner", inner},
            {"n_positions", tableRows(findTensor, "position_embd.weight", 0)},
            {"n_ctx", h.integer("context_length", 1, 1 << 24, 1024)},
            {"layer_norm_epsilon", eps},
            {"activation_function", "gelu_new"}};
  }
  if (arch == "bloom")
    return {{"model_type", "bloom"}, {"vocab_size", vocab}, {"hidden_size", hidden},
            {"n_layer", layers},     {"n_head", heads},     {"layer_norm_epsilon", eps}};
  if (arch == "bert")
    return {{"model_type", "bert"},
            {"vocab_size", vocab},
            {"hidden_size", hidden},
            {"num_hidden_layers", layers},
            {"num_attention_heads", heads},
            {"intermediate_size", inner},
            {"max_position_embeddings", tableRows(findTensor, "position_embd.weight", 0)},
            {"type_vocab_size", tableRows(findTensor, "token_types.weight", 0)},
            {"layer_norm_eps", h.number("attention.layer_norm_epsilon", 1e-12)},
            {"hidden_act", "gelu"}};
  // gptneox: rotary on rope.dimension_count of each head's dimensions (Pythia: a quarter).
  const int64_t headDim = hidden % heads == 0 ? hidden / heads : 0;
  const int64_t rotary = h.integer("rope.dimension_count", 2, 1 << 16);
  if (headDim == 0 || rotary > headDim)
    mappingError(arch + ".rope.dimension_count (" + std::to_string(rotary) +
                 ") exceeds the head size (" + std::to_string(headDim) + ")");
  // The family rotates int(head_dim * rotary_pct) dimensions: the fraction that gives `rotary`.
  double pct = static_cast<double>(rotary) / static_cast<double>(headDim);
  if (static_cast<int64_t>(static_cast<double>(headDim) * pct) != rotary)
    pct = std::nextafter(pct, 2.0);
  return {{"model_type", "gpt_neox"},
          {"vocab_size", vocab},
          {"hidden_size", hidden},
          {"num_hidden_layers", layers},
          {"num_attention_heads", heads},
          {"intermediate_size", inner},
          {"max_position_embeddings", h.integer("context_length", 1, 1 << 24, 2048)},
          {"layer_norm_eps", eps},
          {"rotary_pct", pct},
          {"rotary_emb_base", h.number("rope.freq_base", 10000.0)},
          {"use_parallel_residual", h.flag("use_parallel_residual", true)},
          {"hidden_act", "gelu"},
          {"tie_word_embeddings", findTensor("output.weight").second == nullptr}};
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

std::string GgufModel::supportedArchitectures() {
  return "llama, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gpt2, gptneox, bloom, bert";
}

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
  const TensorFinder findTensor = [&](const std::string& name) {
    for (const GgufFile* p : m_parts)
      if (const GgufTensorInfo* t = p->findTensor(name)) return std::make_pair(p, t);
    return std::pair<const GgufFile*, const GgufTensorInfo*>(nullptr, nullptr);
  };
  const GgufValue* arch = file.find("general.architecture");
  if (!arch || !arch->string()) mappingError("general.architecture is missing");
  m_arch = *arch->string();
  const bool llamaFamily =
      m_arch == "llama" || m_arch == "qwen2" || m_arch == "qwen3" || m_arch == "gemma";
  const bool gemma2 = m_arch == "gemma2" || m_arch == "gemma3";
  if (!llamaFamily && !gemma2 && m_arch != "phi3" && m_arch != "gpt2" && m_arch != "gptneox" &&
      m_arch != "bloom" && m_arch != "bert")
    mappingError("architecture '" + m_arch +
                 "' is not supported yet; supported: " + supportedArchitectures());
  const Hyper h(file, m_arch);
  const GgufTensorInfo* embed = findTensor("token_embd.weight").second;
  if (!embed || embed->dims.size() != 2) mappingError("tensor token_embd.weight is missing");
  const int64_t heads = h.integer("attention.head_count", 1, 1024);
  const int64_t kvHeads = h.integer("attention.head_count_kv", 1, 1024, heads);
  const int64_t hidden = h.integer("embedding_length", 1, 1 << 16);
  const int64_t layers = h.integer("block_count", 1, 1024);
  // The family allocates its modules from these numbers before the weights replace them: they
  // must be the tensors' (the Llama family reads every shape from the weights as it loads).
  if (static_cast<int64_t>(embed->dims[0]) != hidden)
    mappingError("tensor token_embd.weight is " + std::to_string(embed->dims[0]) + " wide, not " +
                 m_arch + ".embedding_length (" + std::to_string(hidden) + ")");
  for (const GgufFile* part : m_parts)
    for (const GgufTensorInfo& t : part->tensors())
      if (t.name.rfind("blk.", 0) == 0) {
        const std::size_t end = t.name.find('.', 4);
        const std::string n = t.name.substr(4, end == std::string::npos ? 0 : end - 4);
        if (!n.empty() && n.size() < 6 && n.find_first_not_of("0123456789") == std::string::npos &&
            std::stoll(n) >= layers)
          mappingError("tensor " + t.name + " is past " + m_arch + ".block_count (" +
                       std::to_string(layers) + ")");
      }
  if (llamaFamily) {
    m_config = llamaConfig(h, *embed, findTensor);
  } else if (gemma2) {
    m_config = gemma2Config(h, *embed, findTensor, file);
  } else if (m_arch == "phi3") {
    m_config = phi3Config(h, *embed, findTensor);
  } else {
    m_config = otherConfig(h, *embed, findTensor);
  }

  const std::set<std::string> transposed = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
  std::set<std::string> names;
  for (const GgufFile* part : m_parts)
    for (const GgufTensorInfo& t : part->tensors()) {
      if (!names.insert(t.name).second)
        mappingError("tensor " + t.name + " is in two parts of the split model");
      Tensor out;
      out.file = part;
      out.hfName = hfName(m_arch, t.name);
      if (out.hfName.empty())
        mappingError("tensor " + t.name + " has no place in the " + m_arch + " family");
      if (out.hfName == kFoldedIntoConfig || out.hfName == kTiedCopy) continue;
      out.info = &t;
      // llama's converter permutes Q and K (weights and biases) for llama.cpp's interleaved
      // rotary layout; qwen2 and qwen3 are converted unpermuted (llama.cpp rotates them as NeoX
      // does).
      if (m_arch == "llama" && out.hfName.find(".self_attn.q_proj.") != std::string::npos)
        out.permutedHeads = heads;
      if (m_arch == "llama" && out.hfName.find(".self_attn.k_proj.") != std::string::npos)
        out.permutedHeads = kvHeads;
      // GPT-NeoX's and BLOOM's fused query_key_value is per head [q, k, v]; their converters
      // regroup it as all of Q, then K, then V (weights and biases).
      if ((m_arch == "gptneox" || m_arch == "bloom") &&
          out.hfName.find(".query_key_value.") != std::string::npos)
        out.qkvHeads = heads;
      // GPT-2's Conv1D weights are [in, out]; its converter transposes them to [out, in] rows.
      const std::string module = out.hfName.substr(0, out.hfName.rfind('.'));
      out.transposed = m_arch == "gpt2" && out.matrix() &&
                       transposed.count(module.substr(module.find('.', 2) + 1)) > 0;
      // Gemma's converters add 1 to every norm weight (llama.cpp multiplies by the weight; Hugging
      // Face's GemmaRMSNorm by 1 + weight): taken off again.
      const bool gemma = m_arch == "gemma" || gemma2;
      const std::string tail = "norm.weight";
      if (gemma && out.hfName.size() > tail.size() &&
          out.hfName.compare(out.hfName.size() - tail.size(), tail.size(), tail) == 0)
        out.normShift = 1.0f;
      const uint64_t rows = t.dims.size() == 1 ? t.dims[0] : t.rows();
      if (out.permutedHeads > 0 && rows % static_cast<uint64_t>(2 * out.permutedHeads) != 0)
        mappingError("tensor " + t.name + " has " + std::to_string(rows) +
                     " rows, not a whole number of " + std::to_string(out.permutedHeads) +
                     " heads of rotary pairs");
      if (out.qkvHeads > 0 && rows % static_cast<uint64_t>(3 * out.qkvHeads) != 0)
        mappingError("tensor " + t.name + " has " + std::to_string(rows) +
                     " rows, not a whole number of " + std::to_string(out.qkvHeads) +
                     " heads of query, key and value");
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
  std::map<std::string, uint64_t> layers;  // "blk.N" -> float32 bytes of its matrices
  for (const Tensor& t : m_tensors) {
    const std::string prefix = "blk.";
    if (!t.matrix() || t.info->name.rfind(prefix, 0) != 0) continue;
    const std::size_t end = t.info->name.find('.', prefix.size());
    layers[t.info->name.substr(0, end)] += t.info->columns() * t.info->rows() * 4;
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
    std::vector<int64_t> shape = t.info->shape();
    if (t.transposed) std::reverse(shape.begin(), shape.end());
    header[t.hfName] = {
        {"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
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
    if (t.permutedHeads == 0 && t.qkvHeads == 0 && !t.transposed) {
      t.file->readRows(info, 0, info.rows(), dst);
      if (t.normShift != 0)
        for (uint64_t i = 0; i < info.columns() * info.rows(); ++i) dst[i] -= t.normShift;
      continue;
    }
    // Rows in Hugging Face's order (row_order.h); a bias is one row of values, reordered alike.
    const bool vector = info.dims.size() == 1;
    const uint64_t rows = vector ? info.dims[0] : info.rows();
    const uint64_t cols = vector ? 1 : info.columns();
    std::vector<float> source(rows * cols);
    t.file->readRows(info, 0, vector ? 1 : rows, source.data());
    for (uint64_t r = 0; r < rows; ++r) {
      const auto from = static_cast<uint64_t>(storedRowOf(
          static_cast<int64_t>(r), static_cast<int64_t>(rows), t.permutedHeads, t.qkvHeads));
      for (uint64_t c = 0; c < cols; ++c)
        dst[t.transposed ? c * rows + r : r * cols + c] = source[from * cols + c];
    }
  }
  return out;
}

}  // namespace attnscope
