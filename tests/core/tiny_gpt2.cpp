// SPDX-License-Identifier: GPL-3.0-or-later
#include "tiny_gpt2.h"

#include "gpt2_byte_symbols.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace attnscope::test {
namespace {

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

std::string tinyVocabJson() {
  nlohmann::json v = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) v[test::gpt2ByteSymbol(b)] = b;
  v[test::gpt2Symbols("he")] = 256;
  v[test::gpt2Symbols(" t")] = 257;
  v[test::gpt2Symbols(" the")] = 258;
  return v.dump();
}

std::string tinyMerges() {
  return "#version: 0.2\nh e\n" + test::gpt2Symbols(" ") + " t\n" + test::gpt2Symbols(" t") +
         " he\n";
}

std::string tinyConfigJson(const TinyGpt2& s) {
  return nlohmann::json{{"model_type", "gpt2"},      {"activation_function", "gelu_new"},
                        {"n_layer", s.layers},       {"n_head", s.heads},
                        {"n_embd", s.embd},          {"n_positions", s.positions},
                        {"n_ctx", s.positions},      {"vocab_size", s.vocab},
                        {"layer_norm_epsilon", 1e-5}}
      .dump(2);
}

std::vector<NamedTensor> tinyGpt2Weights(const TinyGpt2& s) {
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto tensor = [&](const std::string& name, std::vector<int64_t> shape, float mean,
                          float sd) {
    FloatTensor t(std::move(shape));
    for (float& v : t.data) v = mean + sd * normal(rng);
    return NamedTensor{name, std::move(t)};
  };
  const int64_t C = s.embd;
  std::vector<NamedTensor> w;
  w.push_back(tensor("wte.weight", {s.vocab, C}, 0, 0.5f));
  w.push_back(tensor("wpe.weight", {s.positions, C}, 0, 0.3f));
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    w.push_back(tensor(p + "ln_1.weight", {C}, 1, 0.1f));
    w.push_back(tensor(p + "ln_1.bias", {C}, 0, 0.1f));
    w.push_back(tensor(p + "attn.c_attn.weight", {C, 3 * C}, 0, 0.3f));
    w.push_back(tensor(p + "attn.c_attn.bias", {3 * C}, 0, 0.1f));
    w.push_back(tensor(p + "attn.c_proj.weight", {C, C}, 0, 0.2f));
    w.push_back(tensor(p + "attn.c_proj.bias", {C}, 0, 0.1f));
    w.push_back(tensor(p + "ln_2.weight", {C}, 1, 0.1f));
    w.push_back(tensor(p + "ln_2.bias", {C}, 0, 0.1f));
    w.push_back(tensor(p + "mlp.c_fc.weight", {C, 4 * C}, 0, 0.2f));
    w.push_back(tensor(p + "mlp.c_fc.bias", {4 * C}, 0, 0.1f));
    w.push_back(tensor(p + "mlp.c_proj.weight", {4 * C, C}, 0, 0.1f));
    w.push_back(tensor(p + "mlp.c_proj.bias", {C}, 0, 0.1f));
  }
  w.push_back(tensor("ln_f.weight", {C}, 1, 0.1f));
  w.push_back(tensor("ln_f.bias", {C}, 0, 0.1f));
  return w;
}

uint16_t floatToHalf(float f) {
  // Round to nearest even through the exponent/mantissa fields; the test weights are normal
  // numbers well inside the half range.
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int exponent = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = x & 0x7fffff;
  if (exponent <= 0) return static_cast<uint16_t>(sign);  // flush tiny values to zero
  uint32_t h = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return static_cast<float>((h & 0x8000) ? -v : v);
}

std::string rawSafetensors(const std::vector<RawTensor>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::string data;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  std::string json = header.dump();
  while (json.size() % 8) json += ' ';
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  return out + json + data;
}

std::vector<NamedTensor> writeTinyGpt2WithSilentHead(const std::string& folder,
                                                     const TinyGpt2& spec, int layer, int head) {
  std::vector<NamedTensor> weights = writeTinyGpt2(folder, spec);
  const int hd = spec.embd / spec.heads;
  for (NamedTensor& t : weights) {
    if (t.name != "h." + std::to_string(layer) + ".attn.c_proj.weight") continue;
    for (int row = head * hd; row < (head + 1) * hd; ++row)
      for (int c = 0; c < spec.embd; ++c)
        t.tensor.data[static_cast<std::size_t>(row) * spec.embd + c] = 0;
  }
  writeSafetensors((std::filesystem::path(folder) / "model.safetensors").string(), weights);
  return weights;
}

std::vector<NamedTensor> writeTinyGpt2(const std::string& folder, const TinyGpt2& s) {
  namespace fs = std::filesystem;
  fs::create_directories(folder);
  const auto at = [&](const char* name) { return (fs::path(folder) / name).string(); };
  writeText(at("config.json"), tinyConfigJson(s));
  writeText(at("vocab.json"), tinyVocabJson());
  writeText(at("merges.txt"), tinyMerges());

  std::vector<NamedTensor> weights = tinyGpt2Weights(s);
  std::vector<NamedTensor> stored;  // under the names the file uses, with the extra buffers
  const std::string prefix = s.prefix ? "transformer." : "";
  for (const NamedTensor& w : weights) stored.push_back({prefix + w.name, w.tensor});
  if (s.prefix) {
    for (int l = 0; l < s.layers; ++l) {
      FloatTensor causal({1, 1, s.positions, s.positions});
      stored.push_back({"transformer.h." + std::to_string(l) + ".attn.bias", causal});
    }
    stored.push_back({"lm_head.weight", weights.front().tensor});
  }

  if (s.storage == TinyStorage::F16 || s.storage == TinyStorage::BF16) {
    const bool f16 = s.storage == TinyStorage::F16;
    // bfloat16 is the top half of a float32, rounded to nearest even.
    const auto toBf16 = [](float f) {
      uint32_t x;
      std::memcpy(&x, &f, 4);
      return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
    };
    const auto fromBf16 = [](uint16_t h) {
      const uint32_t x = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &x, 4);
      return f;
    };
    std::vector<RawTensor> raw;
    for (NamedTensor& w : stored) {
      RawTensor r{w.name, f16 ? "F16" : "BF16", w.tensor.shape, {}};
      for (float& v : w.tensor.data) {
        const uint16_t h = f16 ? floatToHalf(v) : toBf16(v);
        r.bytes.push_back(static_cast<char>(h & 0xff));
        r.bytes.push_back(static_cast<char>(h >> 8));
      }
      raw.push_back(std::move(r));
    }
    writeText(at("model.safetensors"), rawSafetensors(raw));
    for (NamedTensor& w : weights) {
      for (float& v : w.tensor.data) v = f16 ? halfToFloat(floatToHalf(v)) : fromBf16(toBf16(v));
    }
  } else if (s.storage == TinyStorage::Sharded) {
    const std::size_t half = stored.size() / 2;
    const std::vector<NamedTensor> first(stored.begin(),
                                         stored.begin() + static_cast<std::ptrdiff_t>(half));
    const std::vector<NamedTensor> second(stored.begin() + static_cast<std::ptrdiff_t>(half),
                                          stored.end());
    writeSafetensors(at("model-00001-of-00002.safetensors"), first);
    writeSafetensors(at("model-00002-of-00002.safetensors"), second);
    nlohmann::json map = nlohmann::json::object();
    for (const NamedTensor& w : first) map[w.name] = "model-00001-of-00002.safetensors";
    for (const NamedTensor& w : second) map[w.name] = "model-00002-of-00002.safetensors";
    writeText(at("model.safetensors.index.json"),
              nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(2));
  } else {
    writeSafetensors(at("model.safetensors"), stored);
  }
  return weights;
}

}  // namespace attnscope::test
