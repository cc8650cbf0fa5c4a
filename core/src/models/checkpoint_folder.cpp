// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/checkpoint_folder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "attnscope/error.h"
#include "io/mapped_files.h"
#include "io/torch_checkpoint.h"
#include "runtime/batch_input.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

/// The records as one safetensors file in memory, so every family reads .bin and safetensors
/// weights through the same checkpoint and loader.
std::string safetensorsOf(const std::vector<TorchTensorRecord>& records) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const TorchTensorRecord& r : records) {
    header[r.name] = {{"dtype", toString(r.dtype)},
                      {"shape", r.shape},
                      {"data_offsets", {offset, offset + r.bytes.size()}}};
    offset += r.bytes.size();
  }
  std::string json = header.dump();
  while ((8 + json.size()) % 8 != 0) json += ' ';  // keep the data 8-byte aligned
  std::string out;
  out.reserve(8 + json.size() + offset);
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  out += json;
  for (const TorchTensorRecord& r : records)
    out.append(reinterpret_cast<const char*>(r.bytes.data()), r.bytes.size());
  return out;
}

}  // namespace

SafetensorsCheckpoint openCheckpointFolder(const std::string& folder) {
  std::error_code ec;
  const fs::path dir(folder);
  const bool safetensors = fs::is_regular_file(dir / "model.safetensors", ec) ||
                           fs::is_regular_file(dir / "model.safetensors.index.json", ec);
  const fs::path bin = dir / "pytorch_model.bin";
  if (safetensors || !fs::is_regular_file(bin, ec))
    return SafetensorsCheckpoint::openFolder(folder);
  std::vector<TorchTensorRecord> records = readTorchCheckpoint(bin.string());
  if (records.empty()) throw Error(ErrorKind::Format, bin.string() + ": holds no tensors");
  return SafetensorsCheckpoint::fromMemory(safetensorsOf(records), "pytorch_model.bin");
}

namespace {

/// The sizes of the folder's model*.safetensors files (one file or shards beside their index).
std::vector<uint64_t> safetensorsSizes(const fs::path& dir) {
  std::vector<uint64_t> sizes;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("model", 0) != 0 || it->path().extension() != ".safetensors") continue;
    if (!it->is_regular_file(ec)) continue;
    const uintmax_t size = it->file_size(ec);
    if (!ec) sizes.push_back(size);
  }
  return sizes;
}

}  // namespace

uint64_t checkpointLoadBytes(const std::string& folder) {
  const fs::path dir(folder);
  uint64_t safetensors = 0;
  for (const uint64_t size : safetensorsSizes(dir)) safetensors += size;
  if (safetensors > 0) return safetensors;
  std::error_code ec;
  const fs::path bin = dir / "pytorch_model.bin";
  if (!fs::is_regular_file(bin, ec)) return 0;
  const uintmax_t size = fs::file_size(bin, ec);
  return ec ? 0 : 3 * static_cast<uint64_t>(size);
}

uint64_t mappedCheckpointBytes(const std::string& folder) {
  uint64_t mapped = 0;
  for (const uint64_t size : safetensorsSizes(fs::path(folder)))
    if (size >= kSafetensorsMapFrom) mapped += size;
  return mapped;
}

void checkWeightsFit(const std::string& folder, const std::string& name, uint64_t memoryLimitBytes,
                     uint64_t availableBytes) {
  const uint64_t weights = checkpointLoadBytes(folder);
  const uint64_t mapped = std::min(mappedCheckpointBytes(folder), weights);
  const uint64_t inMemory = weights - mapped;
  if (inMemory > memoryLimitBytes) {
    throw Error(ErrorKind::ResourceLimit,
                name + ": loading its weights needs about " + formatBytes(inMemory) +
                    ", more than the memory limit of " + formatBytes(memoryLimitBytes) +
                    " (raise --memory-limit, or the limit in Settings)");
  }
  if (mapped > memoryLimitBytes && mapped > availableBytes) {
    throw Error(ErrorKind::ResourceLimit,
                name + ": its weights take " + formatBytes(mapped) +
                    " (read from the files as they are used), more than the " +
                    formatBytes(availableBytes) +
                    " of memory this machine has available now: every run would read them from "
                    "disk again. Close other programs, or raise the memory limit (--memory-limit, "
                    "or the limit in Settings) above " +
                    formatBytes(mapped) + " to open it anyway");
  }
}

}  // namespace attnscope
