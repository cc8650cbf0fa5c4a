// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/safetensors_checkpoint.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "attnscope/error.h"
#include "io/file_io.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::openFolder(const std::string& folder) {
  SafetensorsCheckpoint ckpt;
  std::error_code ec;
  const fs::path dir(folder);
  if (fs::is_regular_file(dir / kSingle, ec)) {
    ckpt.addFile(folder, kSingle);
    return ckpt;
  }
  const fs::path indexPath = dir / kIndex;
  if (!fs::is_regular_file(indexPath, ec)) {
    const bool hasBin = fs::exists(dir / "pytorch_model.bin", ec);
    throw Error(ErrorKind::Io, "no " + std::string(kSingle) + ", " + kIndex +
                                   " or pytorch_model.bin in " + folder +
                                   (hasBin ? " (pytorch_model.bin is not read: it is a pickle that "
                                             "can run code; download the safetensors weights)"
                                           : ""));
  }
  const nlohmann::json index = nlohmann::json::parse(readFile(indexPath.string(), kMaxConfigBytes),
                                                     nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw Error(ErrorKind::Format,
                indexPath.string() + ": expected a JSON object with a \"weight_map\" object");
  }
  // Shards in first-mention order, each opened once.
  std::vector<std::string> shards;
  std::set<std::string> seen;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string()) {
      throw Error(ErrorKind::Format,
                  indexPath.string() + ": weight_map[\"" + tensor + "\"] is not a file name");
    }
    const std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      throw Error(ErrorKind::Format, indexPath.string() + ": shard \"" + name +
                                         "\" is not a file name inside the folder");
    }
    if (seen.insert(name).second) shards.push_back(name);
  }
  if (shards.empty()) throw Error(ErrorKind::Format, indexPath.string() + ": weight_map is empty");
  for (const std::string& shard : shards) {
    if (!fs::is_regular_file(dir / shard, ec)) {
      throw Error(ErrorKind::Io,
                  "missing shard " + shard + " in " + folder + " (listed in " + kIndex + ")");
    }
    ckpt.addFile(folder, shard);
  }
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    const Entry* e = ckpt.find(tensor);
    if (!e || e->fileName != file.get<std::string>()) {
      throw Error(ErrorKind::Format, indexPath.string() + ": tensor '" + tensor + "' is not in " +
                                         file.get<std::string>());
    }
  }
  return ckpt;
}

SafetensorsCheckpoint SafetensorsCheckpoint::openFile(const std::string& path) {
  SafetensorsCheckpoint ckpt;
  const fs::path p(path);
  ckpt.addFile(p.parent_path().string(), p.filename().string());
  return ckpt;
}

SafetensorsCheckpoint SafetensorsCheckpoint::fromMemory(std::string bytes,
                                                        const std::string& fileName) {
  SafetensorsCheckpoint ckpt;
  ckpt.m_files.push_back(
      std::make_unique<SafetensorsFile>(SafetensorsFile::fromBytes(std::move(bytes))));
  ckpt.addEntries(fileName);
  return ckpt;
}

const std::map<std::string, std::string>& SafetensorsCheckpoint::metadata() const {
  static const std::map<std::string, std::string> none;
  return m_files.empty() ? none : m_files.front()->metadata();
}

void SafetensorsCheckpoint::addFile(const std::string& folder, const std::string& fileName) {
  m_files.push_back(std::make_unique<SafetensorsFile>(
      SafetensorsFile::open((fs::path(folder) / fileName).string())));
  addEntries(fileName);
}

void SafetensorsCheckpoint::addEntries(const std::string& fileName) {
  const SafetensorsFile* file = m_files.back().get();
  for (const TensorInfo& info : file->tensors()) {
    const auto [it, inserted] = m_entries.emplace(info.name, Entry{file, &info, fileName});
    if (!inserted) {
      throw Error(ErrorKind::Format, "tensor '" + info.name + "' is in both " +
                                         it->second.fileName + " and " + fileName);
    }
  }
}

const SafetensorsCheckpoint::Entry* SafetensorsCheckpoint::find(const std::string& name) const {
  const auto it = m_entries.find(name);
  return it == m_entries.end() ? nullptr : &it->second;
}

const SafetensorsCheckpoint::Entry* SafetensorsCheckpoint::find(
    const std::string& name, const std::vector<std::string>& prefixes) const {
  for (const std::string& prefix : prefixes)
    if (const Entry* e = find(prefix + name)) return e;
  return nullptr;
}

void SafetensorsCheckpoint::requireShape(const std::string& name, const std::vector<int64_t>& shape,
                                         const std::string& config,
                                         const std::vector<std::string>& prefixes) const {
  const Entry* e = find(name, prefixes);
  if (!e) {
    // Named as loading would name it, under the first prefix (the one the caller expects).
    throw Error(ErrorKind::Format, "missing tensor '" + prefixes.front() + name + "' " +
                                       FloatTensor::formatShape(shape) + ", which " + config +
                                       " implies");
  }
  if (e->info->shape != shape) {
    throw Error(ErrorKind::Format, config + " needs tensor '" + name + "' to be " +
                                       FloatTensor::formatShape(shape) + ", but " + e->fileName +
                                       " has shape " + FloatTensor::formatShape(e->info->shape));
  }
}

void SafetensorsCheckpoint::requireAbsent(const std::string& name, const std::string& config,
                                          const std::vector<std::string>& prefixes) const {
  if (const Entry* e = find(name, prefixes)) {
    throw Error(ErrorKind::Format, "unexpected tensor '" + e->info->name + "' in " + e->fileName +
                                       ": more layers or heads than " + config + " says");
  }
}

FloatTensor SafetensorsCheckpoint::readFloat(const std::string& name) const {
  const Entry* e = find(name);
  if (!e) throw Error(ErrorKind::Format, "missing tensor '" + name + "' in the weights");
  return e->file->readFloat(name);
}

}  // namespace attnscope
