// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnscope/safetensors.h"

namespace attnscope {

/// The weights of a Hugging Face model folder: one model.safetensors, or shards
/// (model-00001-of-00002.safetensors, ...) listed by model.safetensors.index.json's weight_map.
/// Tensors are looked up by name across all files and read one at a time, so loading never holds
/// a second copy of the whole model.
class SafetensorsCheckpoint final {
 public:
  /// Throws Error(Io) naming the missing file (model.safetensors, the index, or a shard) and
  /// Error(Format) for a malformed index, a shard outside the folder or a tensor in two files.
  static SafetensorsCheckpoint openFolder(const std::string& folder);

  /// One safetensors file on its own (an attnscope checkpoint, say). Throws like
  /// SafetensorsFile::open.
  static SafetensorsCheckpoint openFile(const std::string& path);

  /// One file's bytes already in memory (a pytorch_model.bin converted by the core), named
  /// fileName in messages. Throws like SafetensorsFile::fromBytes.
  static SafetensorsCheckpoint fromMemory(std::string bytes, const std::string& fileName);

  /// The __metadata__ of the first file.
  const std::map<std::string, std::string>& metadata() const;

  struct Entry {
    const SafetensorsFile* file = nullptr;
    const TensorInfo* info = nullptr;
    std::string fileName;  // "model.safetensors", for messages
  };

  const Entry* find(const std::string& name) const;
  const std::map<std::string, Entry>& entries() const { return m_entries; }
  /// The entry of `name` under the first of `prefixes` that has it ("" for none), or nullptr.
  const Entry* find(const std::string& name, const std::vector<std::string>& prefixes) const;
  /// From the headers alone, so a config that disagrees with the weights is refused before a
  /// model is built: throws Error(Format) unless `name` (under one of `prefixes`) has `shape`.
  /// `config` says where the expectation comes from ("config.json: n_layer 12, n_embd 768").
  void requireShape(const std::string& name, const std::vector<int64_t>& shape,
                    const std::string& config,
                    const std::vector<std::string>& prefixes = {""}) const;
  /// Throws Error(Format) when `name` exists: a config that says fewer layers or heads than the
  /// checkpoint holds.
  void requireAbsent(const std::string& name, const std::string& config,
                     const std::vector<std::string>& prefixes = {""}) const;
  /// float32 copy of one tensor; throws Error(Format) naming it when missing or not a float type.
  FloatTensor readFloat(const std::string& name) const;

 private:
  void addFile(const std::string& folder, const std::string& fileName);
  void addEntries(const std::string& fileName);  // of the file added last

  std::vector<std::unique_ptr<SafetensorsFile>> m_files;
  std::map<std::string, Entry> m_entries;
};

}  // namespace attnscope
