// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attnscope {

/// A model found on this machine, ready for ModelSpec::source: a folder in the Hugging Face cache,
/// or a GGUF file in a local model store (findGgufModels).
struct CachedModel {
  std::string name;       // "gpt2", "openai-community/gpt2"; "ollama: llama3.2:1b (Q4_K_M)"
  std::string path;       // the snapshot folder holding config.json; a GGUF file
  std::string modelType;  // config.json's "model_type" ("gpt2"), a GGUF's general.architecture;
                          // empty when unreadable
  // GGUF files only:
  std::string store;       // "ollama", "lm studio", "llama.cpp", "hugging face"; "" for a folder
  std::string id;          // what --model takes besides the name: "ollama:llama3.2:1b"
  std::string fileType;    // general.file_type ("Q4_K_M"), "" when the file does not say
  std::string error;       // why its header cannot be read (listed, never opened); "" when fine
  bool supported = false;  // its architecture maps onto a family (GgufModel)
};

/// The Hugging Face hub caches searched, in order: $HF_HUB_CACHE, $HF_HOME/hub,
/// ~/.cache/huggingface/hub (only those that are set; existing or not).
std::vector<std::string> huggingFaceCacheDirs();

/// Every cached model folder with a config.json, sorted by name; a name cached in two places is
/// listed once (the first cache wins). Never throws: unreadable folders are skipped.
std::vector<CachedModel> findCachedModels();

/// GGUF models in the stores local runners keep them in, sorted by name:
///   ollama      $OLLAMA_MODELS, else ~/.ollama/models: manifests/HOST/NAMESPACE/MODEL/TAG names
///               the model blob (blobs/sha256-...); "ollama: llama3.2:1b (Q4_K_M)", id
///               "ollama:llama3.2:1b" (library models), "ollama: user/model:tag (...)" otherwise
///   lm studio   ~/.lmstudio/models and ~/.cache/lm-studio/models: PUBLISHER/REPO/FILE.gguf
///   llama.cpp   $LLAMA_CACHE, else ~/.cache/llama.cpp: its downloaded *.gguf
///   hugging face  *.gguf in the snapshots of the Hugging Face caches (huggingFaceCacheDirs)
/// Only headers are read (metadata and tensor infos, no tensor data). A file that cannot be read
/// is listed with its error; of a split model (-00001-of-00003.gguf) only the first part is
/// listed (it opens the whole model). Never throws.
std::vector<CachedModel> findGgufModels();

/// The file of a GGUF model findGgufModels lists, by its id ("ollama:llama3.2:1b"; an Ollama
/// name without a tag means :latest, as ollama run does) or its name, with or without the
/// " (Q4_K_M)"; std::nullopt when none matches or its header cannot be read.
std::optional<std::string> resolveGgufModel(const std::string& name);

/// The snapshot folder of a cached model: "gpt2" matches models--gpt2 and models--*--gpt2
/// (openai-community/gpt2), "org/name" only models--org--name. The snapshot refs/main points to
/// wins; otherwise the newest snapshot holding config.json. Failing that, a GGUF model's file
/// (resolveGgufModel). std::nullopt when none is cached.
std::optional<std::string> resolveCachedModel(const std::string& name);

}  // namespace attnscope
