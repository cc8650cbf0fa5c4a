// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench_support.h"

#include <filesystem>
#include <fstream>
#include <sstream>

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
