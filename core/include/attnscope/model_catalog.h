// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attnscope {

/// A model folder found in the Hugging Face cache, ready for ModelSpec::source.
struct CachedModel {
  std::string name;       // "gpt2", "openai-community/gpt2"
  std::string path;       // the snapshot folder holding config.json
  std::string modelType;  // config.json's "model_type" ("gpt2"), empty when unreadable
};

/// The Hugging Face hub caches searched, in order: $HF_HUB_CACHE, $HF_HOME/hub,
/// ~/.cache/huggingface/hub (only those that are set; existing or not).
std::vector<std::string> huggingFaceCacheDirs();

/// Every cached model folder with a config.json, sorted by name; a name cached in two places is
/// listed once (the first cache wins). Never throws: unreadable folders are skipped.
std::vector<CachedModel> findCachedModels();

/// The snapshot folder of a cached model: "gpt2" matches models--gpt2 and models--*--gpt2
/// (openai-community/gpt2), "org/name" only models--org--name. The snapshot refs/main points to
/// wins; otherwise the newest snapshot holding config.json. std::nullopt when none is cached.
std::optional<std::string> resolveCachedModel(const std::string& name);

}  // namespace attnscope
