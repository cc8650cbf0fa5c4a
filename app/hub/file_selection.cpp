// SPDX-License-Identifier: GPL-3.0-or-later
#include "file_selection.h"

#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "attnscope/error.h"
#include "hub_names.h"

namespace attnscope::hub {
namespace {

// What the tokenizers of core/src/tokenizers read (FolderTokenizer, Marian's vocabularies) and
// the configuration files beside them; each only when the repository has it.
const char* const kSmallFiles[] = {
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "source.spm",
    "target.spm",
};

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string listed(const std::vector<std::string>& names, std::size_t most = 8) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < most; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > most) out += ", … (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? std::string("none") : out;
}

void addOnce(std::vector<std::string>& files, const std::string& file) {
  if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
}

}  // namespace

bool matchesGlob(const std::string& pattern, const std::string& name) {
  // huggingface_hub's filter_repo_objects: "folder/" means everything inside it.
  const std::string p = !pattern.empty() && pattern.back() == '/' ? pattern + "*" : pattern;
  return ::fnmatch(p.c_str(), name.c_str(), 0) == 0;
}

FileSelection FileSelection::choose(const std::string& repoId,
                                    const std::vector<std::string>& siblings,
                                    const std::vector<std::string>& includes) {
  const std::set<std::string> present(siblings.begin(), siblings.end());
  const auto has = [&](const std::string& f) { return present.count(f) > 0; };
  std::vector<std::string> ggufs;
  for (const std::string& f : siblings) {
    if (endsWith(f, ".gguf")) ggufs.push_back(f);
  }
  std::vector<std::string> included;
  for (const std::string& pattern : includes) {
    bool any = false;
    for (const std::string& f : siblings) {
      if (matchesGlob(pattern, f)) {
        addOnce(included, f);
        any = true;
      }
    }
    if (!any)
      throw Error(ErrorKind::InvalidArgument, "no file of " + repoId + " matches --include '" +
                                                  pattern +
                                                  "'; its files: " + listed(siblings, 12));
  }

  FileSelection s;
  if (has("config.json")) {
    for (const char* f : kSmallFiles) {
      if (has(f)) s.files.push_back(f);
    }
    std::vector<std::string> topSafetensors;
    for (const std::string& f : siblings) {
      if (f.find('/') == std::string::npos && f.rfind("model", 0) == 0 &&
          endsWith(f, ".safetensors"))
        topSafetensors.push_back(f);
    }
    if (has("model.safetensors.index.json")) {
      s.index = "model.safetensors.index.json";
      s.files.push_back(s.index);
    } else if (has("model.safetensors")) {
      s.files.push_back("model.safetensors");
    } else if (!topSafetensors.empty()) {
      // Shards without their index: the checkpoint reader takes every model*.safetensors.
      for (const std::string& f : topSafetensors) s.files.push_back(f);
    } else if (has("pytorch_model.bin")) {
      s.files.push_back("pytorch_model.bin");
    } else if (included.empty()) {
      throw Error(ErrorKind::InvalidArgument,
                  repoId +
                      " has no weights attnscope opens (model.safetensors, its shards, or "
                      "pytorch_model.bin); its files: " +
                      listed(siblings, 12));
    }
  } else if (!ggufs.empty()) {
    std::vector<std::string> chosen;
    for (const std::string& f : included.empty() ? ggufs : included) {
      if (endsWith(f, ".gguf")) chosen.push_back(f);
    }
    if (chosen.size() != 1) {
      throw Error(ErrorKind::InvalidArgument,
                  repoId + " holds " + std::to_string(ggufs.size()) +
                      " GGUF files; choose one with --include (for example --include '" +
                      ggufs.front() + "'): " + listed(ggufs));
    }
    s.gguf = chosen.front();
    s.files.push_back(s.gguf);
  } else if (included.empty()) {
    throw Error(ErrorKind::InvalidArgument,
                repoId +
                    " has neither a config.json nor a GGUF file, so attnscope cannot open "
                    "it; its files: " +
                    listed(siblings, 12));
  }
  for (const std::string& f : included) addOnce(s.files, f);
  for (const std::string& f : s.files) {
    if (!isSafeRepoFile(f))
      throw Error(ErrorKind::Format,
                  repoId + " lists a file name that is not a safe path: '" + f + "'");
  }
  return s;
}

void FileSelection::addShards(const std::string& indexJson,
                              const std::vector<std::string>& siblings) {
  const nlohmann::json j = nlohmann::json::parse(indexJson, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(ErrorKind::Format, index + " has no weight_map object");
  const std::set<std::string> present(siblings.begin(), siblings.end());
  std::set<std::string> shards;
  for (const auto& entry : j["weight_map"].items()) {
    if (!entry.value().is_string())
      throw Error(ErrorKind::Format, index + ": a weight_map value is not a file name");
    shards.insert(entry.value().get<std::string>());
  }
  for (const std::string& shard : shards) {
    if (!isSafeRepoFile(shard) || !present.count(shard))
      throw Error(ErrorKind::Format,
                  index + " names the shard '" + shard + "', which the repository does not have");
    addOnce(files, shard);
  }
}

}  // namespace attnscope::hub
