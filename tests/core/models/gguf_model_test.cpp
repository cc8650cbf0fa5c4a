// SPDX-License-Identifier: GPL-3.0-or-later
// GgufModel: a Llama folder's weights, converted to GGUF by tests/reference/gguf_reference.py (as
// convert_hf_to_gguf.py does: Q and K rows permuted, names mapped, F32 / F16 / Q8_0 / Q4_K), open
// as the same Llama model again: attention equals the folder's for F32 and F16 (weights are f16
// values, so both are exact) and stays within a measured bound for the quantized types. The
// public path (openModel, what --model uses) opens the files whatever they are called, with the
// tokenizer inside them, and refuses what it cannot open in one line naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "attnscope/error.h"
#include "attnscope/folder_tokenizer.h"
#include "attnscope/model.h"
#include "attnscope/model_spec.h"
#include "attnscope/safetensors.h"
#include "expect_close.h"
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
          "GGUF Q8_0-like: 16 Q8_0, 6 F32 tensors, 1.0 MB; dequantized to float32 at load", 0),
      0u)
      << openModel(q8)->info().fileSummary;
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
  // 941,824 weights: 3.6 MiB as float32 (the file's own size does not matter); the limit 1 MB.
  refused(gguf, 1000000, ErrorKind::ResourceLimit,
          "dequantized to float32 need 3.6 MiB (4 bytes a weight), more than the memory limit of "
          "1.0 MiB (raise --memory-limit");
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
