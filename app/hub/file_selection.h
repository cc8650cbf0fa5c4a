// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace attnscope::hub {

/// The files of a repository attnscope needs, chosen from the revision's file list, so that a
/// download fetches a model in the one form attnscope opens rather than every format the repo
/// ships (ONNX, TensorFlow, Flax and .bin copies often triple its size).
struct FileSelection {
  /// Repository files to fetch, in a stable order, without duplicates.
  std::vector<std::string> files;
  /// The weights' index (model.safetensors.index.json) when the weights are sharded: the shards
  /// it names are added once it has been downloaded (addShards). Empty otherwise.
  std::string index;
  /// A GGUF repository: the .gguf file chosen (one file is the whole model). Empty for a folder.
  std::string gguf;

  /// A model folder (config.json): config.json, generation_config.json, the tokenizer files
  /// present, and the weights in the best form present: the safetensors index and its shards,
  /// else model.safetensors, else pytorch_model.bin. A GGUF repository: the one .gguf file, or
  /// the one `includes` picks. `includes` (fnmatch globs, as huggingface_hub's allow_patterns; a
  /// pattern ending in '/' means the whole folder) adds files. Throws Error (InvalidArgument)
  /// naming what is there when nothing attnscope can open would be fetched.
  static FileSelection choose(const std::string& repoId, const std::vector<std::string>& siblings,
                              const std::vector<std::string>& includes);

  /// Adds the shards the index's weight_map names. Throws Error (Format) for an index that is
  /// not JSON or names a file the repository does not have.
  void addShards(const std::string& indexJson, const std::vector<std::string>& siblings);
};

/// fnmatch-style matching as Python's fnmatch on POSIX: '*' also matches '/'.
bool matchesGlob(const std::string& pattern, const std::string& name);

}  // namespace attnscope::hub
