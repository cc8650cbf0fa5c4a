// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attnscope/safetensors.h"

namespace attnscope::test {

/// How a test's tiny GPT-2 folder is laid out on disk.
enum class TinyStorage { F32, F16, BF16, Sharded };

struct TinyGpt2 {
  int layers = 2;
  int heads = 4;
  int embd = 16;
  int positions = 32;
  int vocab = 259;     // the 256 byte symbols and three merges
  bool prefix = true;  // "transformer." names, with the buffers a GPT2LMHeadModel save holds
  TinyStorage storage = TinyStorage::F32;
  unsigned seed = 1;
};

/// Random GPT-2 weights under their bare Hugging Face names ("h.0.attn.c_attn.weight").
std::vector<NamedTensor> tinyGpt2Weights(const TinyGpt2& spec);

/// Writes a complete Hugging Face folder (config.json, weights, vocab.json, merges.txt) and
/// returns the weights as the model will see them (rounded through F16/BF16 for those storages).
std::vector<NamedTensor> writeTinyGpt2(const std::string& folder, const TinyGpt2& spec);

/// writeTinyGpt2, then the weights rewritten (as F32, bare names) with head `head` of layer
/// `layer` cut off from the output: the rows of its attn.c_proj.weight ([C, C], y = z W_O) that
/// read the head set to 0. Returns the weights as written.
std::vector<NamedTensor> writeTinyGpt2WithSilentHead(const std::string& folder,
                                                     const TinyGpt2& spec, int layer, int head);

/// One tensor of a hand-built safetensors file, in any dtype.
struct RawTensor {
  std::string name;
  std::string dtype;  // "F16", "I64", ...
  std::vector<int64_t> shape;
  std::string bytes;
};
/// Safetensors bytes built here from the format description (not with the code under test), so
/// dtypes other than F32 can be written.
std::string rawSafetensors(const std::vector<RawTensor>& tensors);
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

std::string tinyConfigJson(const TinyGpt2& spec);
std::string tinyVocabJson();
std::string tinyMerges();

}  // namespace attnscope::test
