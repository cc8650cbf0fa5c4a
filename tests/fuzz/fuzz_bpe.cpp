// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2's BPE on arbitrary bytes: spans tile the input, and decode(encodeIds(text)) == text.
// Uses ../shared/data/gpt2 when present, else a tiny byte-level vocabulary written at start-up.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "../core/gpt2_byte_symbols.h"
#include "attnscope/bpe_tokenizer.h"
#include "fuzz_check.h"

namespace {

std::unique_ptr<attnscope::BpeTokenizer> g_bpe;

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void writeTinyVocab(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream vocab(dir + "/vocab.json", std::ios::binary);
  vocab << "{";
  for (int b = 0; b < 256; ++b)
    vocab << jsonString(attnscope::test::gpt2ByteSymbol(b)) << ": " << b << ", ";
  vocab << jsonString("he") << ": 256, " << jsonString(attnscope::test::gpt2ByteSymbol(' ') + "t")
        << ": 257, " << jsonString(attnscope::test::gpt2ByteSymbol(' ') + "the") << ": 258}";
  std::ofstream merges(dir + "/merges.txt", std::ios::binary);
  merges << "#version: 0.2\nh e\n"
         << attnscope::test::gpt2ByteSymbol(' ') << " t\n"
         << attnscope::test::gpt2ByteSymbol(' ') << "t he\n";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string shared = std::string(ATTNSCOPE_SHARED_DATA) + "/gpt2";
  if (std::filesystem::exists(shared + "/encoder.json") &&
      !std::getenv("ATTNSCOPE_FUZZ_TINY_VOCAB")) {
    g_bpe = std::make_unique<attnscope::BpeTokenizer>(
        attnscope::BpeTokenizer::fromFiles(shared + "/encoder.json", shared + "/vocab.bpe"));
  } else {
    const std::string dir =
        (std::filesystem::temp_directory_path() / "attnscope-fuzz-bpe").string();
    writeTinyVocab(dir);
    g_bpe = std::make_unique<attnscope::BpeTokenizer>(
        attnscope::BpeTokenizer::fromFiles(dir + "/vocab.json", dir + "/merges.txt"));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expectOnlyUserErrors([&] {
    const auto tokens = g_bpe->encode(text);
    fuzz::checkSpans(text, tokens);
    if (!text.empty() && (tokens.empty() || tokens.back().byteEnd != text.size()))
      fuzz::fail("BPE tokens do not cover the text");
    if (g_bpe->decode(g_bpe->encodeIds(text)) != text) fuzz::fail("decode(encode(text)) != text");
  });
  return 0;
}
