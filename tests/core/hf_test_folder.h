// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attnscope/safetensors.h"
#include "temp_dir.h"

namespace attnscope::test {

/// Writes a Hugging Face model folder: config.json, a tokenizer fixture
/// (tests/data/tokenizers/<tokenizer>; the word-level one has 301 tokens) as tokenizer.json, and
/// model.safetensors with N(0, stddev) weights of the given names and shapes. Returns the folder.
inline std::string writeHfFolderAt(const std::string& folder, const nlohmann::json& config,
                                   const std::map<std::string, std::vector<int64_t>>& shapes,
                                   unsigned seed = 3, float stddev = 0.3f,
                                   const std::string& tokenizer = "wordlevel.json") {
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/config.json") << config.dump();
  std::filesystem::copy_file(std::string(ATTNSCOPE_TEST_DATA) + "/tokenizers/" + tokenizer,
                             folder + "/tokenizer.json");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<NamedTensor> tensors;
  for (const auto& [name, shape] : shapes) {
    FloatTensor t(shape);
    for (float& v : t.data) v = normal(rng);
    tensors.push_back({name, std::move(t)});
  }
  writeSafetensors(folder + "/model.safetensors", tensors);
  return folder;
}

/// The same folder as dir/model.
inline std::string writeHfFolder(const TempDir& dir, const nlohmann::json& config,
                                 const std::map<std::string, std::vector<int64_t>>& shapes,
                                 unsigned seed = 3, float stddev = 0.3f,
                                 const std::string& tokenizer = "wordlevel.json") {
  return writeHfFolderAt(dir.path("model"), config, shapes, seed, stddev, tokenizer);
}

}  // namespace attnscope::test
