// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench_support.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

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

namespace {

/// A tied Llama's shapes, and the folder's config.json, vocabulary and tensor list from them.
struct LlamaShape {
  int layers, hidden, inner, heads, kvHeads, vocab, positions;
  double ropeTheta;
  const char* dtype;  // config.json's torch_dtype
};

struct LlamaTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool ones;           // a norm's weight: every value `constant`, not random
  float constant = 1;  // Gemma's (1 + w) norms: 0
};

/// Writes config.json and the byte vocabulary; returns every tensor the folder needs, in order.
std::vector<LlamaTensor> startLlamaFolder(const std::string& folder, const LlamaShape& m) {
  std::filesystem::create_directories(folder);
  const nlohmann::json config = {{"model_type", "llama"},
                                 {"architectures", {"LlamaForCausalLM"}},
                                 {"vocab_size", m.vocab},
                                 {"hidden_size", m.hidden},
                                 {"intermediate_size", m.inner},
                                 {"num_hidden_layers", m.layers},
                                 {"num_attention_heads", m.heads},
                                 {"num_key_value_heads", m.kvHeads},
                                 {"max_position_embeddings", m.positions},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", m.ropeTheta},
                                 {"hidden_act", "silu"},
                                 {"torch_dtype", m.dtype},
                                 {"tie_word_embeddings", true}};
  std::ofstream(folder + "/config.json") << config.dump(1);
  std::ofstream(folder + "/vocab.json") << test::tinyVocabJson();
  std::ofstream(folder + "/merges.txt") << test::tinyMerges();
  const int64_t H = m.hidden, headDim = m.hidden / m.heads;
  std::vector<LlamaTensor> out = {{"model.embed_tokens.weight", {m.vocab, H}, false}};
  for (int l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.push_back({p + "input_layernorm.weight", {H}, true});
    out.push_back({p + "self_attn.q_proj.weight", {m.heads * headDim, H}, false});
    out.push_back({p + "self_attn.k_proj.weight", {m.kvHeads * headDim, H}, false});
    out.push_back({p + "self_attn.v_proj.weight", {m.kvHeads * headDim, H}, false});
    out.push_back({p + "self_attn.o_proj.weight", {H, m.heads * headDim}, false});
    out.push_back({p + "post_attention_layernorm.weight", {H}, true});
    out.push_back({p + "mlp.gate_proj.weight", {m.inner, H}, false});
    out.push_back({p + "mlp.up_proj.weight", {m.inner, H}, false});
    out.push_back({p + "mlp.down_proj.weight", {H, m.inner}, false});
  }
  out.push_back({"model.norm.weight", {H}, true});
  return out;
}

}  // namespace

std::string smolLmFolder() {
  const std::string folder = scratchDir() + "/smollm-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  const LlamaShape shape{30, 576, 1536, 9, 3, 259, 2048, 10000.0, "float32"};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<NamedTensor> weights;
  for (const LlamaTensor& t : startLlamaFolder(folder, shape)) {
    FloatTensor w(t.shape);
    for (float& v : w.data) v = t.ones ? 1.0f : normal(rng);
    weights.push_back({t.name, std::move(w)});
  }
  writeSafetensors(folder + "/model.safetensors", weights);
  return folder;
}

namespace {

/// Writes random BF16 tensors into a folder, streaming each tensor to its shard (at most
/// shardBytes of data each; one shard is model.safetensors, more are
/// model-0000i-of-0000n.safetensors with their index), so even an 8B model's 16 GB never sit in
/// memory. Values are uniform in ±0.03 from a xorshift generator, truncated to BF16 (billions of
/// values, where a normal distribution from std::mt19937 would take minutes); norm weights are
/// their constant.
void writeBf16Tensors(const std::string& folder, const std::vector<LlamaTensor>& tensors,
                      uint64_t shardBytes) {
  const auto bytesOf = [](const LlamaTensor& t) {
    uint64_t n = 2;
    for (const int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    return n;
  };
  std::vector<std::vector<const LlamaTensor*>> shards(1);
  uint64_t filled = 0;
  for (const LlamaTensor& t : tensors) {
    if (filled > 0 && filled + bytesOf(t) > shardBytes) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().push_back(&t);
    filled += bytesOf(t);
  }
  const auto shardName = [&](std::size_t i) {
    if (shards.size() == 1) return std::string("model.safetensors");
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    return std::string(name);
  };
  uint64_t state = 0x9E3779B97F4A7C15ull;
  nlohmann::json weightMap = nlohmann::json::object();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    uint64_t offset = 0;
    for (const LlamaTensor* t : shards[i]) {
      header[t->name] = {
          {"dtype", "BF16"}, {"shape", t->shape}, {"data_offsets", {offset, offset + bytesOf(*t)}}};
      offset += bytesOf(*t);
      weightMap[t->name] = shardName(i);
    }
    std::string json = header.dump();
    while (json.size() % 8) json += ' ';
    const std::string path = folder + "/" + shardName(i);
    std::ofstream out(path + ".tmp", std::ios::binary);
    for (int b = 0; b < 8; ++b) out.put(static_cast<char>((json.size() >> (8 * b)) & 0xff));
    out << json;
    std::vector<uint16_t> values;
    for (const LlamaTensor* t : shards[i]) {
      values.resize(bytesOf(*t) / 2);
      for (uint16_t& v : values) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        const float f =
            t->ones ? t->constant : (static_cast<float>(state >> 40) / 16777216.0f - 0.5f) * 0.06f;
        uint32_t u;
        std::memcpy(&u, &f, 4);
        v = static_cast<uint16_t>(u >> 16);
      }
      out.write(reinterpret_cast<const char*>(values.data()),
                static_cast<std::streamsize>(values.size() * 2));
    }
    out.close();
    std::filesystem::rename(path + ".tmp", path);
  }
  if (shards.size() > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weightMap}};
    std::ofstream(folder + "/model.safetensors.index.json") << index.dump(1);
  }
}

/// A random BF16 Llama folder of that shape (writeBf16Tensors).
void writeBf16Llama(const std::string& folder, const LlamaShape& shape, uint64_t shardBytes) {
  writeBf16Tensors(folder, startLlamaFolder(folder, shape), shardBytes);
}

}  // namespace

std::string llama1BFolder() {
  const std::string folder = scratchDir() + "/llama-1b-bf16-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  writeBf16Llama(folder, {16, 2048, 8192, 32, 8, 128256, 131072, 500000.0, "bfloat16"}, UINT64_MAX);
  return folder;
}

std::string llama2LayerFolder() {
  const std::string folder = scratchDir() + "/llama-2l-2048-bf16-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  writeBf16Llama(folder, {2, 2048, 8192, 32, 8, 128256, 131072, 500000.0, "bfloat16"}, UINT64_MAX);
  return folder;
}

std::string llama1BQ4KFile() {
  const std::string file = scratchDir() + "/llama-1b-q4_k_m.gguf";
  if (std::filesystem::exists(file)) return file;
  const std::string folder = llama1BFolder();
  const std::string cmd = "/usr/bin/python3 " + std::string(ATTNSCOPE_SOURCE_DIR) +
                          "/scripts/gguf-from-folder.py " + folder + " " + file +
                          ".tmp --ftype q4_k_m 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  std::filesystem::rename(file + ".tmp", file);
  return file;
}

std::string llama8BFolder() {
  const std::string folder = scratchDir() + "/llama-8b-bf16-random";
  if (std::filesystem::exists(folder + "/model.safetensors.index.json")) return folder;
  // Sharded like the real checkpoint (4 files of about 5 GB); the index is written last, so a
  // folder without it is an interrupted write and is written again.
  writeBf16Llama(folder, {32, 4096, 14336, 32, 8, 128256, 131072, 500000.0, "bfloat16"},
                 5000000000ull);
  return folder;
}

std::string gemma2Folder() {
  const std::string folder = scratchDir() + "/gemma2-2b-bf16-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  std::filesystem::create_directories(folder);
  constexpr int kLayers = 26, kHidden = 2304, kInner = 9216, kHeads = 8, kKvHeads = 4,
                kHeadDim = 256, kVocab = 256000;
  // Gemma2Config's values for gemma-2-2b (transformers' defaults are the 9B's).
  const nlohmann::json config = {{"model_type", "gemma2"},
                                 {"architectures", {"Gemma2ForCausalLM"}},
                                 {"vocab_size", kVocab},
                                 {"hidden_size", kHidden},
                                 {"intermediate_size", kInner},
                                 {"num_hidden_layers", kLayers},
                                 {"num_attention_heads", kHeads},
                                 {"num_key_value_heads", kKvHeads},
                                 {"head_dim", kHeadDim},
                                 {"max_position_embeddings", 8192},
                                 {"rms_norm_eps", 1e-6},
                                 {"rope_theta", 10000.0},
                                 {"hidden_activation", "gelu_pytorch_tanh"},
                                 {"query_pre_attn_scalar", 256},
                                 {"sliding_window", 4096},
                                 {"attn_logit_softcapping", 50.0},
                                 {"final_logit_softcapping", 30.0},
                                 {"torch_dtype", "bfloat16"},
                                 {"tie_word_embeddings", true}};
  std::ofstream(folder + "/config.json") << config.dump(1);
  std::ofstream(folder + "/vocab.json") << test::tinyVocabJson();
  std::ofstream(folder + "/merges.txt") << test::tinyMerges();
  const int64_t H = kHidden, A = kHeads * kHeadDim, K = kKvHeads * kHeadDim;
  std::vector<LlamaTensor> t = {{"model.embed_tokens.weight", {kVocab, H}, false}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* norm : {"input_layernorm", "post_attention_layernorm",
                             "pre_feedforward_layernorm", "post_feedforward_layernorm"})
      t.push_back({p + norm + ".weight", {H}, true, 0.0f});  // (1 + w): scale 1
    t.push_back({p + "self_attn.q_proj.weight", {A, H}, false});
    t.push_back({p + "self_attn.k_proj.weight", {K, H}, false});
    t.push_back({p + "self_attn.v_proj.weight", {K, H}, false});
    t.push_back({p + "self_attn.o_proj.weight", {H, A}, false});
    t.push_back({p + "mlp.gate_proj.weight", {kInner, H}, false});
    t.push_back({p + "mlp.up_proj.weight", {kInner, H}, false});
    t.push_back({p + "mlp.down_proj.weight", {H, kInner}, false});
  }
  t.push_back({"model.norm.weight", {H}, true, 0.0f});
  writeBf16Tensors(folder, t, UINT64_MAX);
  return folder;
}

std::string mixtralFolder() {
  const std::string folder = scratchDir() + "/mixtral-4l-8x2048-bf16-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  std::filesystem::create_directories(folder);
  constexpr int kLayers = 4, kHidden = 4096, kExpertInner = 2048, kExperts = 8, kHeads = 32,
                kKvHeads = 8, kVocab = 32000;
  const nlohmann::json config = {{"model_type", "mixtral"},
                                 {"architectures", {"MixtralForCausalLM"}},
                                 {"vocab_size", kVocab},
                                 {"hidden_size", kHidden},
                                 {"intermediate_size", kExpertInner},
                                 {"num_hidden_layers", kLayers},
                                 {"num_attention_heads", kHeads},
                                 {"num_key_value_heads", kKvHeads},
                                 {"num_local_experts", kExperts},
                                 {"num_experts_per_tok", 2},
                                 {"max_position_embeddings", 32768},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 1e6},
                                 {"sliding_window", nullptr},
                                 {"hidden_act", "silu"},
                                 {"torch_dtype", "bfloat16"},
                                 {"tie_word_embeddings", false}};
  std::ofstream(folder + "/config.json") << config.dump(1);
  std::ofstream(folder + "/vocab.json") << test::tinyVocabJson();
  std::ofstream(folder + "/merges.txt") << test::tinyMerges();
  const int64_t H = kHidden, headDim = kHidden / kHeads, K = kKvHeads * headDim;
  std::vector<LlamaTensor> t = {{"model.embed_tokens.weight", {kVocab, H}, false}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {H}, true});
    t.push_back({p + "self_attn.q_proj.weight", {H, H}, false});
    t.push_back({p + "self_attn.k_proj.weight", {K, H}, false});
    t.push_back({p + "self_attn.v_proj.weight", {K, H}, false});
    t.push_back({p + "self_attn.o_proj.weight", {H, H}, false});
    t.push_back({p + "post_attention_layernorm.weight", {H}, true});
    t.push_back({p + "block_sparse_moe.gate.weight", {kExperts, H}, false});
    for (int e = 0; e < kExperts; ++e) {
      const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
      t.push_back({x + "w1.weight", {kExpertInner, H}, false});
      t.push_back({x + "w2.weight", {H, kExpertInner}, false});
      t.push_back({x + "w3.weight", {kExpertInner, H}, false});
    }
  }
  t.push_back({"model.norm.weight", {H}, true});
  t.push_back({"lm_head.weight", {kVocab, H}, false});
  writeBf16Tensors(folder, t, UINT64_MAX);
  return folder;
}

std::string bertBaseFolder() {
  const std::string folder = scratchDir() + "/bert-base-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  std::filesystem::create_directories(folder);
  constexpr int kLayers = 12, kHidden = 768, kInner = 3072, kHeads = 12, kPositions = 512;
  // [PAD] [UNK] [CLS] [SEP] [MASK] and the 26 letters: bertText(T) is one token per letter.
  nlohmann::json vocab = nlohmann::json::object();
  const char* specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  nlohmann::json added = nlohmann::json::array();
  for (int i = 0; i < 5; ++i) {
    vocab[specials[i]] = i;
    added.push_back({{"id", i},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = static_cast<int>(vocab.size());
  const int kVocab = static_cast<int>(vocab.size());
  const auto special = [](const char* id) {
    return nlohmann::json{{"SpecialToken", {{"id", id}, {"type_id", 0}}}};
  };
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {special("[CLS]"), {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, special("[SEP]")}},
        {"pair",
         {special("[CLS]"),
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          special("[SEP]"),
          {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
          special("[SEP]")}},
        {"special_tokens",
         {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
          {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}}};
  std::ofstream(folder + "/tokenizer.json") << tokenizer.dump();
  const nlohmann::json config = {
      {"model_type", "bert"},         {"architectures", {"BertModel"}},
      {"vocab_size", kVocab},         {"hidden_size", kHidden},
      {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads},
      {"intermediate_size", kInner},  {"max_position_embeddings", kPositions},
      {"type_vocab_size", 2},         {"layer_norm_eps", 1e-12},
      {"hidden_act", "gelu"}};
  std::ofstream(folder + "/config.json") << config.dump(1);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<NamedTensor> weights;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, float fill = -1) {
    FloatTensor t(shape);
    for (float& v : t.data) v = fill >= 0 ? fill : normal(rng);
    weights.push_back({name, std::move(t)});
  };
  const auto linear = [&](const std::string& name, int out, int in) {
    add(name + ".weight", {out, in});
    add(name + ".bias", {out}, 0.0f);
  };
  const auto norm = [&](const std::string& name) {
    add(name + ".weight", {kHidden}, 1.0f);
    add(name + ".bias", {kHidden}, 0.0f);
  };
  add("embeddings.word_embeddings.weight", {kVocab, kHidden});
  add("embeddings.position_embeddings.weight", {kPositions, kHidden});
  add("embeddings.token_type_embeddings.weight", {2, kHidden});
  norm("embeddings.LayerNorm");
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    linear(p + "attention.self.query", kHidden, kHidden);
    linear(p + "attention.self.key", kHidden, kHidden);
    linear(p + "attention.self.value", kHidden, kHidden);
    linear(p + "attention.output.dense", kHidden, kHidden);
    norm(p + "attention.output.LayerNorm");
    linear(p + "intermediate.dense", kInner, kHidden);
    linear(p + "output.dense", kHidden, kInner);
    norm(p + "output.LayerNorm");
  }
  writeSafetensors(folder + "/model.safetensors", weights);
  return folder;
}

std::string t5SmallFolder() {
  const std::string folder = scratchDir() + "/t5-small-random";
  if (std::filesystem::exists(folder + "/model.safetensors")) return folder;
  std::filesystem::create_directories(folder);
  constexpr int kLayers = 6, kModel = 512, kKv = 64, kHeads = 8, kFf = 2048, kVocab = 32128,
                kBuckets = 32;
  std::filesystem::copy_file(
      std::string(ATTNSCOPE_SOURCE_DIR) + "/tests/data/tokenizers/unigram.json",
      folder + "/tokenizer.json", std::filesystem::copy_options::overwrite_existing);
  const nlohmann::json config = {{"model_type", "t5"},
                                 {"architectures", {"T5ForConditionalGeneration"}},
                                 {"vocab_size", kVocab},
                                 {"d_model", kModel},
                                 {"d_kv", kKv},
                                 {"d_ff", kFf},
                                 {"num_layers", kLayers},
                                 {"num_decoder_layers", kLayers},
                                 {"num_heads", kHeads},
                                 {"relative_attention_num_buckets", kBuckets},
                                 {"relative_attention_max_distance", 128},
                                 {"feed_forward_proj", "relu"},
                                 {"tie_word_embeddings", true},
                                 {"decoder_start_token_id", 0},
                                 {"eos_token_id", 2}};
  std::ofstream(folder + "/config.json") << config.dump(1);
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<NamedTensor> weights;
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, float fill = -1) {
    FloatTensor t(shape);
    for (float& v : t.data) v = fill >= 0 ? fill : normal(rng);
    weights.push_back({name, std::move(t)});
  };
  add("shared.weight", {kVocab, kModel});
  for (const bool decoder : {false, true}) {
    const std::string stack = decoder ? "decoder" : "encoder";
    add(stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
        {kBuckets, kHeads});
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = stack + ".block." + std::to_string(l) + ".layer.";
      std::vector<std::string> attention = {p + "0.SelfAttention."};
      if (decoder) attention.push_back(p + "1.EncDecAttention.");
      for (std::size_t i = 0; i < attention.size(); ++i) {
        add(p + std::to_string(i) + ".layer_norm.weight", {kModel}, 1.0f);
        for (const char* m : {"q", "k", "v"})
          add(attention[i] + m + ".weight", {kHeads * kKv, kModel});
        add(attention[i] + "o.weight", {kModel, kHeads * kKv});
      }
      const std::string ff = p + std::to_string(attention.size()) + ".";
      add(ff + "layer_norm.weight", {kModel}, 1.0f);
      add(ff + "DenseReluDense.wi.weight", {kFf, kModel});
      add(ff + "DenseReluDense.wo.weight", {kModel, kFf});
    }
    add(stack + ".final_layer_norm.weight", {kModel}, 1.0f);
  }
  writeSafetensors(folder + "/model.safetensors", weights);
  return folder;
}

std::string t5Text(int repeats) {
  // "Hello world" is 7 pieces of the fixture's Unigram model.
  std::string s;
  for (int i = 0; i < repeats; ++i) s += i ? " Hello world" : "Hello world";
  return s;
}

std::string bertText(int tokens) {
  // [CLS] and [SEP] are two of the tokens; each letter is one word and one token.
  std::string s;
  for (int i = 0; i + 2 < tokens; ++i) {
    if (i) s += ' ';
    s += static_cast<char>('a' + i % 26);
  }
  return s;
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
