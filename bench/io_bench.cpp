// SPDX-License-Identifier: GPL-3.0-or-later
// Tokenizers on 1 MB of text (ours, and Hugging Face tokenizer.json files read by HfTokenizer,
// which scripts/bench_tokenizers.js times in Hugging Face's own library on the same text) and the
// load of a 500 MB safetensors file.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "attnscope/bpe_tokenizer.h"
#include "attnscope/char_tokenizer.h"
#include "attnscope/hf_tokenizer.h"
#include "attnscope/safetensors.h"
#include "attnscope/word_tokenizer.h"
#include "bench_support.h"

namespace attnscope::bench {
namespace {

constexpr std::size_t kTextBytes = 1 << 20;

void tokenize(benchmark::State& state, const Tokenizer& tokenizer) {
  const std::string text = corpusText(kTextBytes);
  std::size_t tokens = 0;
  for (auto _ : state) {
    const std::vector<Token> out = tokenizer.encode(text);
    tokens = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_TokenizeChar(benchmark::State& s) { tokenize(s, CharTokenizer()); }
void BM_TokenizeWord(benchmark::State& s) { tokenize(s, WordTokenizer()); }
void BM_TokenizeBpe(benchmark::State& s) {
  const std::string dir = std::string(ATTNSCOPE_SHARED_DATA) + "/gpt2";
  if (!std::filesystem::exists(dir + "/encoder.json")) {
    s.SkipWithError("GPT-2 tokenizer files not found under ../shared/data/gpt2");
    for (auto _ : s) {
    }
    return;
  }
  tokenize(s, BpeTokenizer::fromFiles(dir + "/encoder.json", dir + "/vocab.bpe"));
}
BENCHMARK(BM_TokenizeChar)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_TokenizeWord)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_TokenizeBpe)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();

// HfTokenizer::encodeIds on the same 1 MB as one call, as Hugging Face's encode(text) is timed
// (scripts/bench_tokenizers.js): ids, tokens, offsets and the post-processor's special tokens.
void tokenizeHf(benchmark::State& state, const std::string& path, const char* what) {
  if (!std::filesystem::exists(path)) {
    state.SkipWithError((std::string(what) + " not found: " + path).c_str());
    for (auto _ : state) {
    }
    return;
  }
  const HfTokenizer tokenizer = HfTokenizer::fromFile(path);
  const std::string text = corpusText(kTextBytes);
  std::size_t tokens = 0;
  for (auto _ : state) {
    const HfEncoding out = tokenizer.encodeIds(text);
    tokens = out.ids.size();
    benchmark::DoNotOptimize(out.ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}
void BM_TokenizeHfLlama3(benchmark::State& s) {
  tokenizeHf(s, std::string(ATTNSCOPE_SHARED_DATA) + "/tokenizers/llama3/tokenizer.json",
             "Llama 3 tokenizer.json");
}
void BM_TokenizeHfWordPiece(benchmark::State& s) {
  tokenizeHf(s, std::string(ATTNSCOPE_SOURCE_DIR) + "/tests/data/tokenizers/wordpiece.json",
             "BERT-style WordPiece tokenizer.json");
}
BENCHMARK(BM_TokenizeHfLlama3)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();
BENCHMARK(BM_TokenizeHfWordPiece)->Unit(benchmark::kMillisecond)->MinTime(0.5)->UseRealTime();

// 500 MB in ten 50 MB float32 tensors; open() validates and maps, readFloat converts every tensor.
std::string bigSafetensors() {
  const std::string path = scratchDir() + "/500mb.safetensors";
  if (std::filesystem::exists(path) && std::filesystem::file_size(path) > 500'000'000) return path;
  std::vector<NamedTensor> tensors;
  for (int i = 0; i < 10; ++i) {
    FloatTensor t({12'500'000});
    for (std::size_t j = 0; j < t.data.size(); j += 4096) t.data[j] = static_cast<float>(j);
    tensors.push_back({"t" + std::to_string(i), std::move(t)});
  }
  writeSafetensors(path, tensors);
  return path;
}

void BM_SafetensorsLoad500MB(benchmark::State& state) {
  const std::string path = bigSafetensors();
  for (auto _ : state) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    for (const TensorInfo& info : file.tensors()) {
      const FloatTensor t = file.readFloat(info.name);
      benchmark::DoNotOptimize(t.data.data());
    }
  }
  state.SetBytesProcessed(
      static_cast<int64_t>(state.iterations() * std::filesystem::file_size(path)));
}
BENCHMARK(BM_SafetensorsLoad500MB)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();

}  // namespace
}  // namespace attnscope::bench
