// SPDX-License-Identifier: GPL-3.0-or-later
// GgufModel: a Llama folder's weights, converted to GGUF by tests/reference/gguf_reference.py (as
// convert_hf_to_gguf.py does: Q and K rows permuted, names mapped, F32 / F16 / Q8_0 / Q4_K), open
// as the same Llama model again: attention equals the folder's for F32 and F16 (weights are f16
// values, so both are exact) and stays within a measured bound for the quantized types.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "attnscope/error.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/safetensors.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "models/gguf_model.h"
#include "python_check.h"
#include "temp_dir.h"

namespace attnscope {
namespace {

constexpr int kVocab = 301;  // tests/data/tokenizers/wordlevel.json
// 256 wide: every linear layer's rows are whole Q4_K blocks.
constexpr int kHidden = 256, kInner = 256, kLayers = 2, kHeads = 4, kKvHeads = 2;
const std::string kScript = std::string(ATTNSCOPE_TEST_DATA) + "/../reference/gguf_reference.py";

nlohmann::json llamaConfig(const std::string& type = "llama") {
  nlohmann::json c = {{"model_type", type},
                      {"vocab_size", kVocab},
                      {"hidden_size", kHidden},
                      {"intermediate_size", kInner},
                      {"num_hidden_layers", kLayers},
                      {"num_attention_heads", kHeads},
                      {"num_key_value_heads", kKvHeads},
                      {"max_position_embeddings", 64},
                      {"rms_norm_eps", 1e-5},
                      {"rope_theta", 10000.0},
                      {"tie_word_embeddings", false}};
  // Llama 3.2's scaling: the GGUF carries it as rope_freqs.weight.
  if (type == "llama")
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 32.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  return c;
}

std::map<std::string, std::vector<int64_t>> llamaShapes(bool biases = false) {
  const int64_t d = kHidden / kHeads;
  std::map<std::string, std::vector<int64_t>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}},
                                                   {"model.norm.weight", {kHidden}},
                                                   {"lm_head.weight", {kVocab, kHidden}}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = {kHidden};
    s[p + "post_attention_layernorm.weight"] = {kHidden};
    s[p + "self_attn.q_proj.weight"] = {kHeads * d, kHidden};
    s[p + "self_attn.k_proj.weight"] = {kKvHeads * d, kHidden};
    s[p + "self_attn.v_proj.weight"] = {kKvHeads * d, kHidden};
    s[p + "self_attn.o_proj.weight"] = {kHidden, kHeads * d};
    s[p + "mlp.gate_proj.weight"] = {kInner, kHidden};
    s[p + "mlp.up_proj.weight"] = {kInner, kHidden};
    s[p + "mlp.down_proj.weight"] = {kHidden, kInner};
    if (biases) {  // qwen2's q/k/v biases
      s[p + "self_attn.q_proj.bias"] = {kHeads * d};
      s[p + "self_attn.k_proj.bias"] = {kKvHeads * d};
      s[p + "self_attn.v_proj.bias"] = {kKvHeads * d};
    }
  }
  return s;
}

// The nearest value with 11 significant bits, which float16 holds exactly in its normal range
// (tiny values become 0): the F16 file then stores the folder's weights unchanged.
float halfPrecision(float v) {
  if (std::fabs(v) < 1e-4f) return 0.0f;
  int e = 0;
  const float m = std::frexp(v, &e);
  return std::ldexp(std::round(m * 2048.0f) / 2048.0f, e);
}

// The folder of tests/core/hf_test_folder.h, with norms near 1, q and k scaled up so attention is
// peaked, every weight a float16 value.
std::string writeLlamaFolder(const test::TempDir& dir, const std::string& type = "llama") {
  const std::string folder =
      test::writeHfFolder(dir, llamaConfig(type), llamaShapes(type == "qwen2"), 5, 0.08f);
  const SafetensorsFile file = SafetensorsFile::open(folder + "/model.safetensors");
  std::vector<NamedTensor> tensors;
  for (const TensorInfo& info : file.tensors()) {
    FloatTensor t = file.readFloat(info.name);
    const bool norm = info.name.find("norm") != std::string::npos;
    const bool qk = info.name.find("q_proj") != std::string::npos ||
                    info.name.find("k_proj") != std::string::npos;
    for (float& v : t.data) v = halfPrecision(norm ? 1.0f + v : qk ? 2.0f * v : v);
    tensors.push_back({info.name, std::move(t)});
  }
  writeSafetensors(folder + "/model.safetensors", tensors);
  return folder;
}

// The GGUF as a Hugging Face folder beside it: GgufModel's config.json and weights, and the
// folder's tokenizer (the GGUF tokenizer is a separate piece).
std::string ggufFolder(const test::TempDir& dir, const std::string& gguf,
                       const std::string& tokenizerFrom) {
  const GgufFile file = GgufFile::open(gguf);
  const GgufModel model(file);
  const std::string folder = dir.path(std::filesystem::path(gguf).stem().string());
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/config.json") << model.config().dump();
  std::ofstream(folder + "/model.safetensors", std::ios::binary)
      << model.float32Safetensors(uint64_t{1} << 30);
  std::filesystem::copy_file(tokenizerFrom + "/tokenizer.json", folder + "/tokenizer.json");
  return folder;
}

FloatTensor attentionOf(const std::string& folder) {
  ModelSpec spec;
  spec.source = folder;
  const std::shared_ptr<Model> model = openModel(spec);
  RunRequest r;
  r.texts = {"the cat sat on the mat and the dog sat on the cat", "the dog"};
  AttentionResult result = model->run(r);
  return std::move(result.group().attention);  // [layers, batch, heads, query, key]
}

struct Difference {
  double max = 0, mean = 0;  // of |a - b| over every weight
};

Difference difference(const FloatTensor& a, const FloatTensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  Difference d;
  const std::size_t n = std::min(a.data.size(), b.data.size());
  for (std::size_t i = 0; i < n; ++i) {
    const double e = std::fabs(static_cast<double>(a.data[i]) - b.data[i]);
    d.max = std::max(d.max, e);
    d.mean += e / static_cast<double>(n);
  }
  return d;
}

TEST(GgufModel, LlamaAttentionEqualsTheHuggingFaceFolders) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const std::string hf = writeLlamaFolder(dir);
  const std::string out = dir.path("gguf");
  std::filesystem::create_directories(out);
  const std::string cmd = std::string(test::kPython) + " " + kScript + " llama " + hf + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  const FloatTensor want = attentionOf(hf);
  {
    const GgufFile file = GgufFile::open(out + "/llama_F32.gguf");
    EXPECT_EQ(GgufModel(file).config()["rope_scaling"], llamaConfig()["rope_scaling"]);
  }
  // Peaked: the mean of each query row's largest weight (padding rows aside) is well above
  // uniform attention's (0.24 here), so a wrong Q/K row order cannot hide.
  double peak = 0;
  int rows = 0;
  const int64_t t = want.dim(4);
  for (int64_t row = 0; row < want.numel() / t; ++row) {
    const auto begin = want.data.begin() + row * t;
    const float top = *std::max_element(begin, begin + t);
    if (top > 0) peak += top, ++rows;
  }
  EXPECT_GT(peak / rows, 0.5);

  // Measured on this fixture, |attention - folder's| max and mean: F32 and F16 0 and 0 (the
  // weights are the same floats); Q8_0 0.111 and 0.00125; Q4_K (the simple quantizer of
  // gguf_reference.py, 8% weight error) 0.963 and 0.0208. A quantized type's max is one near-tie
  // of scores flipping; the mean is its typical change. Bounds: [max, mean].
  const std::map<std::string, std::pair<double, double>> bounds = {
      {"F32", {1e-4, 1e-6}}, {"F16", {1e-4, 1e-6}}, {"Q8_0", {0.25, 0.003}}, {"Q4_K", {1.0, 0.04}}};
  for (const auto& [type, bound] : bounds) {
    SCOPED_TRACE(type);
    const FloatTensor got = attentionOf(ggufFolder(dir, out + "/llama_" + type + ".gguf", hf));
    const Difference error = difference(got, want);
    std::printf("gguf %s: |attention - folder's| max %.3g, mean %.3g\n", type.c_str(), error.max,
                error.mean);
    EXPECT_LE(error.max, bound.first);
    EXPECT_LE(error.mean, bound.second);
  }
}

// qwen2 files are written unpermuted (llama.cpp rotates them NeoX-style) and carry q/k/v biases.
TEST(GgufModel, Qwen2AttentionEqualsTheHuggingFaceFolders) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const std::string hf = writeLlamaFolder(dir, "qwen2");
  const std::string out = dir.path("gguf");
  std::filesystem::create_directories(out);
  const std::string cmd = std::string(test::kPython) + " " + kScript + " llama " + hf + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const GgufFile file = GgufFile::open(out + "/qwen2_F32.gguf");
  EXPECT_EQ(GgufModel(file).config()["model_type"], "qwen2");
  const Difference error =
      difference(attentionOf(ggufFolder(dir, out + "/qwen2_F32.gguf", hf)), attentionOf(hf));
  EXPECT_EQ(error.max, 0.0);
}

TEST(GgufModel, RefusesWhatTheLlamaFamilyCannotMap) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  for (const char* command : {"metadata", "unmappable"}) {
    const std::string cmd =
        std::string(test::kPython) + " " + kScript + " " + command + " " + dir.path("");
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  const auto refused = [&](const std::string& name, const std::string& word) {
    SCOPED_TRACE(name);
    const GgufFile file = GgufFile::open(dir.path(name + ".gguf"));
    test::expectError([&] { GgufModel m(file); }, ErrorKind::Format, word);
  };
  // meta_v3 says llama but has no hyper-parameters and tensors "a" and "b".
  refused("meta_v3", "token_embd.weight is missing");
  refused("arch", "architecture 'falcon' is not supported yet; supported: llama, qwen2, qwen3");
  refused("rope_freqs", "tensor rope_freqs.weight holds RoPE factors that are not Llama 3's");
  refused("fused_qkv", "tensor blk.0.attn_qkv.weight has no place in the llama family");
  refused("partial_rotary", "partial rotary");
}

}  // namespace
}  // namespace attnscope
