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

/// Writes a Hugging Face folder under dir: config.json, tokenizer.json (a copy of
/// tests/data/tokenizers/<tokenizer>) and model.safetensors with N(0, 0.3) weights of the given
/// shapes. Returns the folder.
inline std::string writeRandomFolder(const TempDir& dir, const nlohmann::json& config,
                                     const std::map<std::string, std::vector<int64_t>>& shapes,
                                     const std::string& tokenizer = "wordlevel.json",
                                     unsigned seed = 3) {
  const std::string folder = dir.path("model");
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/config.json") << config.dump();
  std::filesystem::copy_file(std::string(ATTNSCOPE_TEST_DATA) + "/tokenizers/" + tokenizer,
                             folder + "/tokenizer.json");
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<NamedTensor> tensors;
  for (const auto& [name, shape] : shapes) {
    FloatTensor t(shape);
    for (float& v : t.data) v = normal(rng);
    tensors.push_back({name, std::move(t)});
  }
  writeSafetensors(folder + "/model.safetensors", tensors);
  return folder;
}

}  // namespace attnscope::test
