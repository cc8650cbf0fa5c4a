// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench_support.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "attnscope/safetensors.h"
#include "tiny_gpt2.h"

namespace attnscope::bench {

std::string scratchDir() {
  const std::string dir = (std::filesystem::temp_directory_path() / "attnscope-bench").string();
  std::filesystem::create_directories(dir);
  return dir;
}

std::string gpt2Folder() {
  const std::string folder = scratchDir() + "/gpt2-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  test::TinyGpt2 spec;
  spec.layers = 12;
  spec.heads = 12;
  spec.embd = 768;
  spec.positions = 1024;
  spec.vocab = 50257;  // GPT-2's embedding size; ids past the 259 of vocab.json are never produced
  spec.prefix = false;
  test::writeTinyGpt2(folder, spec);
  return folder;
}

std::string smolLmFolder() {
  const std::string folder = scratchDir() + "/smollm-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  std::filesystem::create_directories(folder);
  constexpr int kLayers = 30, kHidden = 576, kInner = 1536, kHeads = 9, kKvHeads = 3, kVocab = 259;
  constexpr int kHeadDim = kHidden / kHeads;
  const nlohmann::json config = {{"model_type", "llama"},
                                 {"architectures", {"LlamaForCausalLM"}},
                                 {"vocab_size", kVocab},
                                 {"hidden_size", kHidden},
                                 {"intermediate_size", kInner},
                                 {"num_hidden_layers", kLayers},
                                 {"num_attention_heads", kHeads},
                                 {"num_key_value_heads", kKvHeads},
                                 {"max_position_embeddings", 2048},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 10000.0},
                                 {"hidden_act", "silu"},
                                 {"tie_word_embeddings", true}};
  std::ofstream(folder + "/config.json") << config.dump(1);
  std::ofstream(folder + "/vocab.json") << test::tinyVocabJson();
  std::ofstream(folder + "/merges.txt") << test::tinyMerges();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<NamedTensor> weights;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, bool ones = false) {
    FloatTensor t(shape);
    for (float& v : t.data) v = ones ? 1.0f : normal(rng);
    weights.push_back({name, std::move(t)});
  };
  add("model.embed_tokens.weight", {kVocab, kHidden});
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {kHidden}, true);
    add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden});
    add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden});
    add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden});
    add(p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim});
    add(p + "post_attention_layernorm.weight", {kHidden}, true);
    add(p + "mlp.gate_proj.weight", {kInner, kHidden});
    add(p + "mlp.up_proj.weight", {kInner, kHidden});
    add(p + "mlp.down_proj.weight", {kHidden, kInner});
  }
  add("model.norm.weight", {kHidden}, true);
  writeSafetensors(folder + "/model.safetensors", weights);
  return folder;
}

std::string gpt2Text(int tokens) {
  // Letters without 'h' and 'e' and no spaces: the three merges of the minimal vocabulary never
  // apply, so each byte is one token.
  static const char kLetters[] = "abcdfgijklmnopqrsuvwxyz";
  std::string s;
  for (int i = 0; i < tokens; ++i) s += kLetters[i % (sizeof kLetters - 1)];
  return s;
}

std::string corpusText(std::size_t bytes) {
  std::ifstream in(std::string(ATTNSCOPE_SHARED_DATA) + "/tinyshakespeare.txt", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string base = ss.str();
  if (base.empty()) base = "The quick brown fox jumps over the lazy dog, and then it rests.\n";
  std::string out;
  while (out.size() < bytes) out += base;
  out.resize(bytes);
  // Cut back to an ASCII boundary so the text stays valid UTF-8.
  while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80)) out.pop_back();
  return out;
}

long long peakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "... kB"
  }
  return -1;
}

}  // namespace attnscope::bench
