// SPDX-License-Identifier: GPL-3.0-or-later
// GgufModel: a Llama folder's weights, converted to GGUF by tests/reference/gguf_reference.py (as
// convert_hf_to_gguf.py does: Q and K rows permuted, names mapped, F32 / F16 / Q8_0 / Q4_K), open
// as the same Llama model again: attention equals the folder's for F32 and F16 (weights are f16
// values, so both are exact) and stays within a measured bound for the quantized types. The
// public path (openModel, what --model uses) opens the files whatever they are called, with the
// tokenizer inside them, and refuses what it cannot open in one line naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "attnscope/error.h"
#include "attnscope/folder_tokenizer.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/safetensors.h"
#include "expect_close.h"
#include "expect_error.h"
#include "hf_test_folder.h"
#include "models/gguf_model.h"
#include "models/gguf_opener.h"
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

// The folder's weights as float16 values, norms' weights near 1 and the tensors `qk` names
// scaled by 2 (so attention is peaked).
void halfPrecisionWeights(const std::string& folder, const std::vector<std::string>& qk) {
  const SafetensorsFile file = SafetensorsFile::open(folder + "/model.safetensors");
  std::vector<NamedTensor> tensors;
  for (const TensorInfo& info : file.tensors()) {
    FloatTensor t = file.readFloat(info.name);
    const auto has = [&](const std::string& part) {
      return info.name.find(part) != std::string::npos;
    };
    const bool norm = (has("norm") || has("LayerNorm") || has(".ln_") || has("ln_f.")) &&
                      info.name.size() > 7 && info.name.substr(info.name.size() - 7) == ".weight";
    const bool scaled = std::any_of(qk.begin(), qk.end(), has);
    for (float& v : t.data) v = halfPrecision(norm ? 1.0f + v : scaled ? 2.0f * v : v);
    tensors.push_back({info.name, std::move(t)});
  }
  writeSafetensors(folder + "/model.safetensors", tensors);
}

// The folder of tests/core/hf_test_folder.h, with norms near 1, q and k scaled up so attention is
// peaked, every weight a float16 value.
std::string writeLlamaFolder(const test::TempDir& dir, const std::string& type = "llama") {
  const std::string folder =
      test::writeHfFolder(dir, llamaConfig(type), llamaShapes(type == "qwen2"), 5, 0.08f);
  halfPrecisionWeights(folder, {"q_proj", "k_proj"});
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

const std::vector<std::string> kTexts = {"the cat sat on the mat and the dog sat on the cat",
                                         "the dog"};

// A folder, or any file --model takes (openModel: the public path).
FloatTensor attentionOf(const std::string& source) {
  ModelSpec spec;
  spec.source = source;
  const std::shared_ptr<Model> model = openModel(spec);
  RunRequest r;
  r.texts = kTexts;
  AttentionResult result = model->run(r);
  return std::move(result.group().attention);  // [layers, batch, heads, query, key]
}

void runScript(const std::string& args) {
  const std::string cmd = std::string(test::kPython) + " " + kScript + " " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
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
  // Q4_K_M (llama-quantize's mix: layer 1's attn_v and ffn_down and the head Q6_K, the rest
  // Q4_K) the same as Q4_K: what it keeps at 6 bits does not reach this attention (layer 1's
  // values and MLP, the head).
  const std::map<std::string, std::pair<double, double>> bounds = {{"F32", {1e-4, 1e-6}},
                                                                   {"F16", {1e-4, 1e-6}},
                                                                   {"Q8_0", {0.25, 0.003}},
                                                                   {"Q4_K", {1.0, 0.04}},
                                                                   {"Q4_K_M", {1.0, 0.04}}};
  for (const auto& [type, bound] : bounds) {
    SCOPED_TRACE(type);
    const FloatTensor got = attentionOf(ggufFolder(dir, out + "/llama_" + type + ".gguf", hf));
    const Difference error = difference(got, want);
    std::printf("gguf %s: |attention - folder's| max %.3g, mean %.3g\n", type.c_str(), error.max,
                error.mean);
    EXPECT_LE(error.max, bound.first);
    EXPECT_LE(error.mean, bound.second);
  }
  // The model info names the mix: general.file_type, then each type's tensors.
  const GgufFile mix = GgufFile::open(out + "/llama_Q4_K_M.gguf");
  const std::string summary = ggufTypeSummary({&mix});
  EXPECT_EQ(summary.rfind("GGUF Q4_K_M: 13 Q4_K, 6 F32, 3 Q6_K tensors, ", 0), 0u) << summary;
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
  refused("arch",
          "architecture 'falcon' is not supported yet; supported: llama, qwen2, qwen3, gemma, "
          "gemma2, gemma3, phi3, gpt2, gptneox, bloom, bert");
  refused("rope_freqs", "tensor rope_freqs.weight holds RoPE factors that are not Llama 3's");
  refused("fused_qkv", "tensor blk.0.attn_qkv.weight has no place in the llama family");
  refused("partial_rotary", "partial rotary");
  refused("past_blocks", "tensor blk.3.attn_norm.weight is past llama.block_count (1)");
  refused("gpt2_kv_heads", "gpt2.attention.head_count_kv differs from head_count");
  refused("phi3_one_factor_list",
          "tensors rope_factors_long.weight and rope_factors_short.weight come together");
  refused("gemma2_value_length", "gemma2.attention.value_length differs from key_length");
}

// gpt2, gptneox, bloom and bert: a small folder of each family, 64 wide in 4 heads, 2 layers.
struct OtherFamily {
  std::string arch;  // general.architecture
  nlohmann::json config;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::vector<std::string> qk;  // what halfPrecisionWeights scales up
};

std::vector<OtherFamily> otherFamilies() {
  constexpr int64_t C = 64, I = 128, P = 64;
  const auto layerNorm = [](auto& s, const std::string& name) {
    s[name + ".weight"] = {C};
    s[name + ".bias"] = {C};
  };
  const auto linear = [](auto& s, const std::string& name, int64_t out, int64_t in) {
    s[name + ".weight"] = {out, in};
    s[name + ".bias"] = {out};
  };
  std::vector<OtherFamily> out;
  {  // GPT-2: Conv1D weights [in, out], learned positions, the head tied to wte.
    OtherFamily f{"gpt2",
                  {{"model_type", "gpt2"},
                   {"vocab_size", kVocab},
                   {"n_embd", C},
                   {"n_layer", kLayers},
                   {"n_head", kHeads},
                   {"n_positions", P},
                   {"n_ctx", P}},
                  {{"wte.weight", {kVocab, C}}, {"wpe.weight", {P, C}}},
                  {"c_attn"}};
    layerNorm(f.shapes, "ln_f");
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "h." + std::to_string(l) + ".";
      layerNorm(f.shapes, p + "ln_1");
      layerNorm(f.shapes, p + "ln_2");
      linear(f.shapes, p + "attn.c_attn", C, 3 * C);  // Conv1D: [in, out], bias [out]
      f.shapes[p + "attn.c_attn.bias"] = {3 * C};
      linear(f.shapes, p + "attn.c_proj", C, C);
      linear(f.shapes, p + "mlp.c_fc", C, 4 * C);
      f.shapes[p + "mlp.c_fc.bias"] = {4 * C};
      linear(f.shapes, p + "mlp.c_proj", 4 * C, C);
      f.shapes[p + "mlp.c_proj.bias"] = {C};
    }
    out.push_back(std::move(f));
  }
  {  // GPT-NeoX: fused per-head query_key_value, partial rotary, parallel residual, embed_out.
    OtherFamily f{"gptneox",
                  {{"model_type", "gpt_neox"},
                   {"vocab_size", kVocab},
                   {"hidden_size", C},
                   {"num_hidden_layers", kLayers},
                   {"num_attention_heads", kHeads},
                   {"intermediate_size", I},
                   {"max_position_embeddings", P},
                   {"rotary_pct", 0.5},
                   {"hidden_act", "gelu"},
                   {"use_parallel_residual", true}},
                  {{"gpt_neox.embed_in.weight", {kVocab, C}}, {"embed_out.weight", {kVocab, C}}},
                  {"query_key_value"}};
    layerNorm(f.shapes, "gpt_neox.final_layer_norm");
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
      layerNorm(f.shapes, p + "input_layernorm");
      layerNorm(f.shapes, p + "post_attention_layernorm");
      linear(f.shapes, p + "attention.query_key_value", 3 * C, C);
      linear(f.shapes, p + "attention.dense", C, C);
      linear(f.shapes, p + "mlp.dense_h_to_4h", I, C);
      linear(f.shapes, p + "mlp.dense_4h_to_h", C, I);
    }
    out.push_back(std::move(f));
  }
  {  // BLOOM: the same fused layout, ALiBi, an embedding LayerNorm, the head tied.
    OtherFamily f{"bloom",
                  {{"model_type", "bloom"},
                   {"vocab_size", kVocab},
                   {"hidden_size", C},
                   {"n_layer", kLayers},
                   {"n_head", kHeads}},
                  {{"word_embeddings.weight", {kVocab, C}}},
                  {"query_key_value"}};
    layerNorm(f.shapes, "word_embeddings_layernorm");
    layerNorm(f.shapes, "ln_f");
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "h." + std::to_string(l) + ".";
      layerNorm(f.shapes, p + "input_layernorm");
      layerNorm(f.shapes, p + "post_attention_layernorm");
      linear(f.shapes, p + "self_attention.query_key_value", 3 * C, C);
      linear(f.shapes, p + "self_attention.dense", C, C);
      linear(f.shapes, p + "mlp.dense_h_to_4h", 4 * C, C);
      linear(f.shapes, p + "mlp.dense_4h_to_h", C, 4 * C);
    }
    out.push_back(std::move(f));
  }
  {  // BERT: the encoder, with token types; no masked-LM head (the converter drops it).
    OtherFamily f{"bert",
                  {{"model_type", "bert"},
                   {"vocab_size", kVocab},
                   {"hidden_size", C},
                   {"num_hidden_layers", kLayers},
                   {"num_attention_heads", kHeads},
                   {"intermediate_size", I},
                   {"max_position_embeddings", P},
                   {"type_vocab_size", 2}},
                  {{"embeddings.word_embeddings.weight", {kVocab, C}},
                   {"embeddings.position_embeddings.weight", {P, C}},
                   {"embeddings.token_type_embeddings.weight", {2, C}}},
                  {"self.query", "self.key"}};
    layerNorm(f.shapes, "embeddings.LayerNorm");
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "encoder.layer." + std::to_string(l) + ".";
      for (const char* m : {"query", "key", "value"})
        linear(f.shapes, p + "attention.self." + m, C, C);
      linear(f.shapes, p + "attention.output.dense", C, C);
      layerNorm(f.shapes, p + "attention.output.LayerNorm");
      linear(f.shapes, p + "intermediate.dense", I, C);
      linear(f.shapes, p + "output.dense", C, I);
      layerNorm(f.shapes, p + "output.LayerNorm");
    }
    out.push_back(std::move(f));
  }
  return out;
}

// Each family's folder, written to GGUF as convert_hf_to_gguf.py does (gguf_reference.py convert:
// GPT-2's Conv1D weights transposed, GPT-NeoX's and BLOOM's fused query_key_value regrouped as Q,
// K, V, the tied heads written again, BERT's names), opens through openModel (the matrices kept
// packed, dequantized per layer) with the attention of the folder: F16 within 1e-4 (the weights
// are float16 values: the same floats), Q8_0 within its measured bound. The GGUF's config and
// widened weights as a folder (float32Safetensors) give the same. The planted mistake (the fused
// rows left per head for NeoX and BLOOM, Q and K exchanged for GPT-2 and BERT) must be far off.
TEST(GgufModel, Gpt2NeoxBloomBertAttentionEqualsTheHuggingFaceFolders) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  // Measured on these fixtures, |attention - folder's| max / mean: F16 0 / 0 for every family
  // (the same floats, packed or widened); Q8_0 gpt2 0.091 / 7.7e-4, gptneox 0.084 / 8.0e-4,
  // bloom 0.108 / 6.0e-4, bert 0.050 / 8.8e-4 (as llama's: a near-tie of scores flipping makes
  // the max). Planted mistakes: max 1.0 for each, mean 0.048 to 0.058. Bounds: [max, mean].
  const std::pair<double, double> q8Bound = {0.25, 0.003};
  test::TempDir dir;
  std::string folders;
  const std::vector<OtherFamily> families = otherFamilies();
  for (const OtherFamily& f : families) {
    const std::string hf = test::writeHfFolderAt(dir.path(f.arch), f.config, f.shapes, 5, 0.15f);
    halfPrecisionWeights(hf, f.qk);
    // The GGUF's tokenizer: a byte-level BPE of 301 tokens, as many as wordlevel.json's.
    if (folders.empty())
      runScript("bpe_tokenizer " + hf);
    else
      std::filesystem::copy_file(dir.path(families.front().arch) + "/tokenizer.json",
                                 hf + "/tokenizer.json",
                                 std::filesystem::copy_options::overwrite_existing);
    folders += (folders.empty() ? "" : ",") + hf;
  }
  const std::string out = dir.path("gguf");
  std::filesystem::create_directories(out);
  runScript("convert " + folders + " " + out + " F16,Q8_0,F16:qkv");
  for (const OtherFamily& f : families) {
    SCOPED_TRACE(f.arch);
    const std::string hf = dir.path(f.arch);
    const FloatTensor want = attentionOf(hf);
    const auto measured = [&](const std::string& what, const FloatTensor& got) {
      const Difference error = difference(got, want);
      std::printf("gguf %s %s: |attention - folder's| max %.3g, mean %.3g\n", f.arch.c_str(),
                  what.c_str(), error.max, error.mean);
      return error;
    };
    const std::string f16 = out + "/" + f.arch + "_F16.gguf";
    EXPECT_LE(measured("F16", attentionOf(f16)).max, 1e-4);
    EXPECT_LE(measured("F16 widened", attentionOf(ggufFolder(dir, f16, hf))).max, 1e-4);
    const Difference q8 = measured("Q8_0", attentionOf(out + "/" + f.arch + "_Q8_0.gguf"));
    EXPECT_LE(q8.max, q8Bound.first);
    EXPECT_LE(q8.mean, q8Bound.second);
    EXPECT_GE(
        measured("F16 planted mistake", attentionOf(out + "/" + f.arch + "_F16_qkv.gguf")).max,
        0.5);
  }
}

// gemma, gemma2, gemma3 (text) and phi3: a small folder of each, 64 wide in 4 heads (2 kv), 2
// layers. The Gemmas' head_dim (32) is not hidden / heads and their query_pre_attn_scalar is
// head_dim, as in every published config but the 27B ones; Gemma 2 caps scores at 8 and windows
// its even layers (sliding_window 4); Gemma 3 normalises q and k, windows both layers and scales
// the global rotary linearly; Phi-3 rotates half of each head with LongRoPE factors and windows
// every layer.
std::vector<OtherFamily> gemmaAndPhi3Families() {
  constexpr int64_t C = 64, I = 128, hd = 32;
  std::vector<OtherFamily> out;
  const nlohmann::json base = {{"vocab_size", kVocab},          {"hidden_size", C},
                               {"intermediate_size", I},        {"num_hidden_layers", kLayers},
                               {"num_attention_heads", kHeads}, {"num_key_value_heads", kKvHeads},
                               {"max_position_embeddings", 64}};
  const auto gemma = [&](const std::string& arch, const std::string& type, nlohmann::json extra) {
    OtherFamily f{arch,
                  base,
                  {{"model.embed_tokens.weight", {kVocab, C}}, {"model.norm.weight", {C}}},
                  {"q_proj", "k_proj"}};
    f.config.update(extra);
    f.config["model_type"] = type;
    f.config["head_dim"] = hd;
    f.config["rms_norm_eps"] = 1e-6;
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      std::vector<std::string> norms = {"input_layernorm", "post_attention_layernorm"};
      if (arch != "gemma")
        norms.insert(norms.end(), {"pre_feedforward_layernorm", "post_feedforward_layernorm"});
      for (const std::string& n : norms) f.shapes[p + n + ".weight"] = {C};
      if (arch == "gemma3")
        f.shapes[p + "self_attn.q_norm.weight"] = f.shapes[p + "self_attn.k_norm.weight"] = {hd};
      f.shapes[p + "self_attn.q_proj.weight"] = {kHeads * hd, C};
      f.shapes[p + "self_attn.k_proj.weight"] = {kKvHeads * hd, C};
      f.shapes[p + "self_attn.v_proj.weight"] = {kKvHeads * hd, C};
      f.shapes[p + "self_attn.o_proj.weight"] = {C, kHeads * hd};
      f.shapes[p + "mlp.gate_proj.weight"] = {I, C};
      f.shapes[p + "mlp.up_proj.weight"] = {I, C};
      f.shapes[p + "mlp.down_proj.weight"] = {C, I};
    }
    out.push_back(std::move(f));
  };
  gemma("gemma", "gemma", {{"hidden_act", "gelu"}});
  gemma("gemma2", "gemma2",
        {{"query_pre_attn_scalar", hd},
         {"attn_logit_softcapping", 8.0},
         {"final_logit_softcapping", 30.0},
         {"sliding_window", 4}});
  gemma("gemma3", "gemma3_text",
        {{"query_pre_attn_scalar", hd},
         {"sliding_window", 4},
         {"rope_theta", 1e6},
         {"rope_local_base_freq", 10000.0},
         {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}});
  OtherFamily phi3{"phi3",
                   base,
                   {{"model.embed_tokens.weight", {kVocab, C}},
                    {"model.norm.weight", {C}},
                    {"lm_head.weight", {kVocab, C}}},
                   {"qkv_proj"}};
  phi3.config.update(nlohmann::json{{"model_type", "phi3"},
                                    {"original_max_position_embeddings", 32},
                                    {"rms_norm_eps", 1e-5},
                                    {"partial_rotary_factor", 0.5},
                                    {"sliding_window", 6},
                                    {"tie_word_embeddings", false},
                                    {"rope_scaling",
                                     {{"type", "longrope"},
                                      {"long_factor", {1.0, 2.0, 4.0, 8.0}},
                                      {"short_factor", {1.0, 1.25, 1.5, 2.0}}}}});
  const int64_t d = C / kHeads;
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    phi3.shapes[p + "input_layernorm.weight"] = {C};
    phi3.shapes[p + "post_attention_layernorm.weight"] = {C};
    phi3.shapes[p + "self_attn.qkv_proj.weight"] = {(kHeads + 2 * kKvHeads) * d, C};
    phi3.shapes[p + "self_attn.o_proj.weight"] = {C, kHeads * d};
    phi3.shapes[p + "mlp.gate_up_proj.weight"] = {2 * I, C};
    phi3.shapes[p + "mlp.down_proj.weight"] = {C, I};
  }
  out.push_back(std::move(phi3));
  return out;
}

// Each folder written to GGUF as convert_hf_to_gguf.py's GemmaModel, Gemma2Model, Gemma3Model and
// Phi3MiniModel do (1 added to every Gemma norm weight, the tied head dropped; Phi-3's fused
// projections kept, its LongRoPE factors as tensors), opened through openModel: F16 within 1e-4,
// Q8_0 within its measured bound, and the planted mistakes (the Gemma norms as a reader that
// does not take the 1 off sees them; Phi-3's fused K and V rows exchanged) far off.
TEST(GgufModel, GemmaAndPhi3AttentionEqualsTheHuggingFaceFolders) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  // Measured on these fixtures, |attention - folder's| max / mean: F16 0 / 0 for each (packed
  // and widened); Q8_0 gemma 0.687 / 1.4e-3, gemma2 0.078 / 6.4e-4, gemma3 0.053 / 5.3e-4, phi3
  // 0.105 / 8.3e-4 (Gemma 1's max is one near-tie of its sharper scores flipping: its norms
  // are 1 + w around 2 and it has no soft cap). Planted mistakes: max 0.81 to 1, mean 0.0097 to
  // 0.047. Bounds: Q8_0 max 0.25 (Gemma 1: 0.8), mean 0.003; a mistake max >= 0.5 and mean
  // >= 0.005.
  test::TempDir dir;
  std::string gemmas, phi3;
  const std::vector<OtherFamily> families = gemmaAndPhi3Families();
  for (const OtherFamily& f : families) {
    const std::string hf = test::writeHfFolderAt(dir.path(f.arch), f.config, f.shapes, 5, 0.15f);
    halfPrecisionWeights(hf, f.qk);
    if (gemmas.empty())
      runScript("bpe_tokenizer " + hf);
    else
      std::filesystem::copy_file(dir.path(families.front().arch) + "/tokenizer.json",
                                 hf + "/tokenizer.json",
                                 std::filesystem::copy_options::overwrite_existing);
    std::string& list = f.arch == "phi3" ? phi3 : gemmas;
    list += (list.empty() ? "" : ",") + hf;
  }
  const std::string out = dir.path("gguf");
  std::filesystem::create_directories(out);
  runScript("convert " + gemmas + " " + out + " F16,Q8_0,F16:norm");
  runScript("convert " + phi3 + " " + out + " F16,Q8_0,F16:qkv");
  for (const OtherFamily& f : families) {
    SCOPED_TRACE(f.arch);
    const std::string hf = dir.path(f.arch);
    const FloatTensor want = attentionOf(hf);
    const auto measured = [&](const std::string& what, const FloatTensor& got) {
      const Difference error = difference(got, want);
      std::printf("gguf %s %s: |attention - folder's| max %.3g, mean %.3g\n", f.arch.c_str(),
                  what.c_str(), error.max, error.mean);
      return error;
    };
    const std::string f16 = out + "/" + f.arch + "_F16.gguf";
    EXPECT_LE(measured("F16", attentionOf(f16)).max, 1e-4);
    EXPECT_LE(measured("F16 widened", attentionOf(ggufFolder(dir, f16, hf))).max, 1e-4);
    const Difference q8 = measured("Q8_0", attentionOf(out + "/" + f.arch + "_Q8_0.gguf"));
    EXPECT_LE(q8.max, f.arch == "gemma" ? 0.8 : 0.25);
    EXPECT_LE(q8.mean, 0.003);
    const std::string mistake = f.arch == "phi3" ? "_F16_qkv.gguf" : "_F16_norm.gguf";
    const Difference planted =
        measured("F16 planted mistake", attentionOf(out + "/" + f.arch + mistake));
    EXPECT_GE(planted.max, 0.5);
    EXPECT_GE(planted.mean, 0.005);
  }
}

// "The pipeline view shows the dequantize step where it happens": every packed matrix a layer
// multiplies by is recorded as a "dequantize" step [rows, columns] named after its type, an input
// of the product's own step (q, k and v each of theirs); the folder's float weights record none.
// OpensThroughOpenModelWhateverItIsCalled runs it on its files.
void expectDequantizeSteps(const std::string& hf, const std::string& q8) {
  const auto traces = [](const std::string& source) {
    ModelSpec spec;
    spec.source = source;
    RunRequest r;
    r.texts = {kTexts[0]};
    return openModel(spec)->run(r).traces;
  };
  for (const LayerTrace& t : traces(hf))
    for (const TraceStep& s : t.steps) EXPECT_NE(s.kind, "dequantize") << s.name;
  const std::vector<LayerTrace> got = traces(q8);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kLayers));
  const int64_t kv = kKvHeads * (kHidden / kHeads);
  for (const LayerTrace& t : got) {
    std::multiset<std::vector<int64_t>> shapes;  // of the dequantized weights
    std::vector<std::string> consumers;          // the steps they feed, in order
    for (std::size_t i = 0; i < t.steps.size(); ++i) {
      const TraceStep& s = t.steps[i];
      if (s.kind != "dequantize") continue;
      EXPECT_EQ(s.name, "dequantize Q8_0");
      EXPECT_TRUE(s.inputs.empty());
      shapes.insert(s.shape);
      int consumer = -1;
      for (std::size_t j = i + 1; j < t.steps.size() && consumer < 0; ++j)
        for (int in : t.steps[j].inputs)
          if (in == static_cast<int>(i)) consumer = static_cast<int>(j);
      ASSERT_GE(consumer, 0) << "nothing uses step " << i;
      EXPECT_EQ(t.steps[consumer].shape.back(), s.shape[0]) << t.steps[consumer].name;
      consumers.push_back(t.steps[consumer].name);
    }
    // q, k, v, o, gate, up, down.
    const std::multiset<std::vector<int64_t>> want = {
        {kHidden, kHidden}, {kv, kHidden},     {kv, kHidden},    {kHidden, kHidden},
        {kInner, kHidden},  {kInner, kHidden}, {kHidden, kInner}};
    EXPECT_EQ(shapes, want);
    ASSERT_GE(consumers.size(), 3u);
    EXPECT_EQ(std::set<std::string>(consumers.begin(), consumers.begin() + 3).size(), 3u)
        << "q, k and v each feed their own step";
  }
}

std::vector<int64_t> idsOf(const Model& model, const std::string& text) {
  std::vector<int64_t> ids;
  for (const Token& t : model.tokenize(text)) ids.push_back(t.id);
  return ids;
}

// The path --model takes: openModel recognises a GGUF by its magic bytes whatever it is called,
// and opens it with the tokenizer inside it (byte-level BPE: the writer copies the folder's
// tokenizer.json into tokenizer.ggml.*). Its ids and attention equal the folder's.
TEST(GgufModel, OpensThroughOpenModelWhateverItIsCalled) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const std::string hf = writeLlamaFolder(dir);
  runScript("bpe_tokenizer " + hf);  // replaces the word-level tokenizer.json: 301 tokens too
  const std::string out = dir.path("gguf");
  std::filesystem::create_directories(out);
  runScript("llama " + hf + " " + out + " F32,Q8_0");
  std::filesystem::copy_file(out + "/llama_F32.gguf", dir.path("model.bin"));
  std::filesystem::copy_file(out + "/llama_F32.gguf", dir.path("sha256-0123abcd"));

  ModelSpec folderSpec;
  folderSpec.source = hf;
  const std::shared_ptr<Model> folder = openModel(folderSpec);
  const FloatTensor want = attentionOf(hf);
  for (const std::string& path :
       {out + "/llama_F32.gguf", dir.path("model.bin"), dir.path("sha256-0123abcd")}) {
    SCOPED_TRACE(path);
    ModelSpec spec;
    spec.source = path;
    const std::shared_ptr<Model> model = openModel(spec);
    for (const std::string& text : kTexts) EXPECT_EQ(idsOf(*model, text), idsOf(*folder, text));
    EXPECT_GT(idsOf(*model, kTexts[0]).size(), 5u);
    EXPECT_LT(idsOf(*model, kTexts[0]).size(), kTexts[0].size());  // merges were applied
    // 2 layers x 9 weights + embeddings, norm, head, rope_freqs; all F32.
    EXPECT_EQ(model->info().fileSummary.rfind("GGUF F32-like: 22 F32 tensors, ", 0), 0u)
        << model->info().fileSummary;
    const FloatTensor got = attentionOf(path);
    ASSERT_EQ(got.shape, want.shape);
    double worst = 0;
    for (std::size_t i = 0; i < got.data.size(); ++i)
      worst = std::max(worst, test::closeError(got.data[i], want.data[i]));
    EXPECT_LE(worst, 1e-4);
  }
  ModelSpec q8;
  q8.source = out + "/llama_Q8_0.gguf";
  EXPECT_EQ(
      openModel(q8)->info().fileSummary.rfind(
          "GGUF Q8_0-like: 16 Q8_0, 6 F32 tensors, 1.0 MB; kept quantized, dequantized per layer "
          "as it runs",
          0),
      0u)
      << openModel(q8)->info().fileSummary;
  expectDequantizeSteps(hf, q8.source);
}

// What the quantized matrices compute from their packed blocks (dequantized a block of rows at a
// time as each layer runs) equals what they compute widened to float32 at load: the same
// dequantized floats, so attention, scores, value norms and next-token probabilities agree to
// float rounding (the products are summed in blocks of rows instead of in one matrix product).
TEST(GgufModel, PackedWeightsComputeWhatWidenedOnesDo) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const std::string hf = writeLlamaFolder(dir);
  runScript("bpe_tokenizer " + hf);
  const std::string out = dir.path("gguf");
  std::filesystem::create_directories(out);
  runScript("llama " + hf + " " + out + " Q8_0,Q4_K");
  for (const std::string type : {"Q8_0", "Q4_K"}) {
    SCOPED_TRACE(type);
    const std::string gguf = out + "/llama_" + type + ".gguf";
    ModelSpec packedSpec, widenedSpec;
    packedSpec.source = gguf;
    widenedSpec.source = ggufFolder(dir, gguf, hf);
    const std::shared_ptr<Model> packed = openModel(packedSpec), widened = openModel(widenedSpec);
    // Held as the file's blocks: the quantized matrices' bytes plus the float32 norms, a
    // fraction of the float32 model's.
    const ModelInfo pi = packed->info(), wi = widened->info();
    EXPECT_EQ(pi.weightDtype, "mixed");  // the matrices' type and the F32 norms
    {
      const GgufFile file = GgufFile::open(gguf);
      const GgufModel model(file);
      EXPECT_EQ(pi.parameterBytes, model.matrixFileBytes() + model.float32Bytes(true));
      EXPECT_EQ(wi.parameterBytes, model.float32Bytes());
    }
    EXPECT_LT(pi.parameterBytes * 3, wi.parameterBytes);
    RunRequest r;
    r.texts = kTexts;
    r.keepValueNorms = true;
    const AttentionResult a = packed->run(r), b = widened->run(r);
    const AttentionGroup &ga = a.group(), &gb = b.group();
    ASSERT_EQ(ga.attention.shape, gb.attention.shape);
    ASSERT_EQ(ga.scores.shape, gb.scores.shape);
    ASSERT_EQ(ga.valueNorms.shape, gb.valueNorms.shape);
    ASSERT_FALSE(ga.valueNorms.data.empty());
    double attention = 0, scores = 0, norms = 0;
    for (std::size_t i = 0; i < ga.attention.data.size(); ++i)
      attention = std::max(attention, test::closeError(ga.attention.data[i], gb.attention.data[i]));
    for (std::size_t i = 0; i < ga.scores.data.size(); ++i)
      if (std::isfinite(gb.scores.data[i]) || std::isfinite(ga.scores.data[i]))
        scores = std::max(scores, test::closeError(ga.scores.data[i], gb.scores.data[i]));
    for (std::size_t i = 0; i < ga.valueNorms.data.size(); ++i)
      norms = std::max(norms, test::closeError(ga.valueNorms.data[i], gb.valueNorms.data[i]));
    std::printf("gguf %s packed vs widened: attention %.3g, scores %.3g, value norms %.3g\n",
                type.c_str(), attention, scores, norms);
    EXPECT_LE(attention, 1e-5);
    EXPECT_LE(scores, 1e-5);
    EXPECT_LE(norms, 1e-5);
    ASSERT_EQ(a.nextTokens.size(), b.nextTokens.size());
    ASSERT_FALSE(a.nextToken.empty());
    for (std::size_t item = 0; item < a.nextTokens.size(); ++item) {
      ASSERT_EQ(a.nextTokens[item].size(), b.nextTokens[item].size());
      for (std::size_t i = 0; i < a.nextTokens[item].size(); ++i) {
        const Prediction &pa = a.nextTokens[item][i], &pb = b.nextTokens[item][i];
        EXPECT_EQ(pa.token.id, pb.token.id);
        EXPECT_LE(test::closeError(pa.probability, pb.probability), 1e-5);
      }
    }
  }
}

// Resident memory, from /proc/self/status ("VmRSS" now, "VmHWM" its peak), in bytes.
uint64_t statusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  return 0;
}

// The peak resident growth while `f` runs: the kernel's high-water mark is reset first
// (clear_refs 5, Linux 4.0+).
template <typename F>
int64_t peakGrowth(F&& f) {
  std::ofstream("/proc/self/clear_refs") << "5";
  const uint64_t before = statusBytes("VmRSS");
  f();
  return static_cast<int64_t>(statusBytes("VmHWM")) - static_cast<int64_t>(before);
}

// One layer with a 16384-wide MLP: 12.6 M weights, 50 MB as float32 and 7 MB as Q4_K. Opened and
// run from the GGUF, the process grows by the packed blocks and a block of dequantized rows at a
// time, never the layer's three matrices at once; the same weights widened (the folder ggufFolder
// writes) grow it by all 50 MB.
TEST(GgufModel, PackedWeightsAreNeverWidenedWhole) {
#if defined(__SANITIZE_ADDRESS__)
  // Seen under `make sanitize`: the widened run grew by 7 MB, not 50 (freed blocks wait in
  // ASan's quarantine and its allocator maps memory its own way).
  GTEST_SKIP() << "resident memory is not the program's under AddressSanitizer (shadow memory, "
                  "the quarantine of freed blocks)";
#endif
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  if (!std::ofstream("/proc/self/clear_refs").good()) GTEST_SKIP() << "no /proc/self/clear_refs";
  test::TempDir dir;
  nlohmann::json config = llamaConfig();
  config["intermediate_size"] = 16384;
  config["num_hidden_layers"] = 1;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, shape] : llamaShapes())
    if (name.find("layers.1.") == std::string::npos) shapes[name] = shape;
  for (const char* m : {"gate_proj", "up_proj"})
    shapes[std::string("model.layers.0.mlp.") + m + ".weight"] = {16384, kHidden};
  shapes["model.layers.0.mlp.down_proj.weight"] = {kHidden, 16384};
  const std::string hf = test::writeHfFolder(dir, config, shapes, 5, 0.05f);
  runScript("bpe_tokenizer " + hf);
  runScript("llama " + hf + " " + dir.path("") + " Q4_K");
  const std::string gguf = dir.path("llama_Q4_K.gguf");
  const std::string widenedFolder = ggufFolder(dir, gguf, hf);
  const auto openAndRun = [&](const std::string& source) {
    ModelSpec spec;
    spec.source = source;
    const std::shared_ptr<Model> model = openModel(spec);
    RunRequest r;
    r.texts = {kTexts[0]};
    model->run(r);
  };
  openAndRun(gguf);  // the runtime's first-use allocations (thread pools, BLAS buffers) aside
  const int64_t packed = peakGrowth([&] { openAndRun(gguf); });
  const int64_t widened = peakGrowth([&] { openAndRun(widenedFolder); });
  const int64_t float32 = int64_t{3} * 16384 * kHidden * 4;
  std::printf("peak resident growth: packed %.1f MB, widened %.1f MB (float32 MLP %.1f MB)\n",
              packed / 1e6, widened / 1e6, float32 / 1e6);
  // Packed: the file's 7 MB of blocks, and a block of dequantized rows (compute_weight.cpp: 4 MiB
  // on one thread, at most 16 MiB on more, which here is one 16384-row matrix) if the allocator
  // did not keep the previous run's: measured 13 and 26 MB.
  EXPECT_LT(packed, float32 * 3 / 4);
  EXPECT_GT(widened, float32 * 9 / 10);  // the measure sees a whole widening
}

// A model split by llama.cpp's gguf-split (NAME-00001-of-00003.gguf, ...) opens from its first
// part as one model, the same as the whole file; a later part, or a missing one, is refused
// naming the file.
TEST(GgufModel, SplitFilesOpenAsOneModel) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const std::string hf = writeLlamaFolder(dir);
  runScript("bpe_tokenizer " + hf);
  runScript("llama " + hf + " " + dir.path("") + " Q8_0");
  runScript("llama_split " + hf + " " + dir.path("") + " Q8_0 3");
  const std::string first = dir.path("llama_Q8_0-00001-of-00003.gguf");
  ModelSpec spec;
  spec.source = first;
  EXPECT_EQ(openModel(spec)->info().fileSummary.rfind("GGUF Q8_0-like: 16 Q8_0, 6 F32 tensors", 0),
            0u)
      << openModel(spec)->info().fileSummary;
  const FloatTensor whole = attentionOf(dir.path("llama_Q8_0.gguf"));
  const FloatTensor split = attentionOf(first);
  EXPECT_EQ(split.shape, whole.shape);
  EXPECT_EQ(split.data, whole.data);

  spec.source = dir.path("llama_Q8_0-00002-of-00003.gguf");
  test::expectError([&] { openModel(spec); }, ErrorKind::Format,
                    "part 2 of 3 of a split model; open its first part, " + first);
  // Renamed, the first part cannot find the others: it says so.
  std::filesystem::copy_file(first, dir.path("renamed.gguf"));
  spec.source = dir.path("renamed.gguf");
  test::expectError([&] { openModel(spec); }, ErrorKind::Format,
                    "a part of a model split in 3 files (split.count): open its first part under "
                    "the name gguf-split gave it (NAME-00001-of-00003.gguf)");
  std::filesystem::remove(dir.path("llama_Q8_0-00003-of-00003.gguf"));
  spec.source = first;
  test::expectError([&] { openModel(spec); }, ErrorKind::Io, "llama_Q8_0-00003-of-00003.gguf");
}

// Refused in one line naming the file: weights over the memory limit (before widening them),
// a truncated file, a vocabulary-only file asked for a model.
TEST(GgufModel, OpenModelRefusesInOneLine) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const std::string hf = writeLlamaFolder(dir);
  runScript("bpe_tokenizer " + hf);
  runScript("llama " + hf + " " + dir.path("") + " F32");
  runScript("vocab " + hf + " " + dir.path("vocab.gguf"));
  const std::string gguf = dir.path("llama_F32.gguf");
  {
    std::ifstream in(gguf, std::ios::binary);
    std::string bytes(std::istreambuf_iterator<char>(in), {});
    std::ofstream(dir.path("truncated.gguf"), std::ios::binary)
        << bytes.substr(0, bytes.size() / 2);
  }
  const auto refused = [&](const std::string& path, uint64_t limit, ErrorKind kind,
                           const std::string& word) {
    SCOPED_TRACE(path);
    ModelSpec spec;
    spec.source = path;
    spec.memoryLimitBytes = limit;
    test::expectError([&] { openModel(spec); }, kind, word);
    try {
      openModel(spec);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  // 941,824 weights, all F32: 3.6 MiB as stored, 1.5 MiB of them in one layer's matrices; the
  // limit 1 MB.
  refused(gguf, 1000000, ErrorKind::ResourceLimit,
          "its weights need 5.1 MiB (3.6 MiB as stored, 1.5 MiB for one layer dequantized to "
          "float32, 0.0 MiB of norms and biases), more than the memory limit of 1.0 MiB (raise "
          "--memory-limit");
  refused(dir.path("truncated.gguf"), uint64_t{1} << 30, ErrorKind::Format, "truncated.gguf");
  refused(dir.path("vocab.gguf"), uint64_t{1} << 30, ErrorKind::Format,
          "vocabulary-only GGUF file (no tensors)");
}

// A vocabulary-only GGUF (llama.cpp's ggml-vocab-*.gguf) is a tokenizer: FolderTokenizer opens
// it, whatever it is called, with the ids of the tokenizer.json it was written from.
TEST(GgufModel, VocabularyOnlyFileTokenizesAsItsTokenizerJson) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  runScript("bpe_tokenizer " + dir.path(""));
  runScript("vocab " + dir.path("") + " " + dir.path("vocab"));
  const FolderTokenizer gguf = FolderTokenizer::open(dir.path("vocab"));
  const FolderTokenizer json = FolderTokenizer::open(dir.path("tokenizer.json"));
  for (const char* text : {"the quick brown fox<|endoftext|> jumps", "hello world, 12345 times",
                           "naïve café 🙂"}) {
    SCOPED_TRACE(text);
    const HfEncoding a = gguf.encodeIds(text), b = json.encodeIds(text);
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.begins, b.begins);
    EXPECT_EQ(a.ends, b.ends);
  }
  EXPECT_EQ(gguf.encodeIds("the fox").ids.size(), 2u);  // "the", "Ġfox": merged
}

}  // namespace
}  // namespace attnscope
