// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gguf_opener.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model_registry.h"
#include "io/gguf_vocabulary_reader.h"
#include "models/decoder_models.h"
#include "models/folder_parts.h"
#include "models/gguf_model.h"
#include "runtime/batch_input.h"
#include "tokenizers/gguf_vocabulary.h"

namespace attnscope {
namespace {

// llama.cpp's llama_ftype (general.file_type): what the converter or llama-quantize was asked
// for. Gaps are values llama.cpp removed.
const char* fileTypeName(int64_t type) {
  static const std::map<int64_t, const char*> names = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"}};
  const auto it = names.find(type);
  return it == names.end() ? nullptr : it->second;
}

std::string sizeText(uint64_t bytes) {
  char buf[32];
  if (bytes >= 100000000)
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

std::string ggufTypeSummary(const GgufFile& file) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> byType;  // type -> {tensors, elements}
  uint64_t bytes = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    auto& [count, elements] = byType[t.type];
    ++count;
    elements += t.columns() * t.rows();
    bytes += t.bytes;
  }
  std::vector<std::pair<uint32_t, std::pair<uint64_t, uint64_t>>> types(byType.begin(),
                                                                        byType.end());
  // Most tensors first; ties by type id, so the order does not depend on the file's.
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string name;
  if (const GgufValue* v = file.find("general.file_type"); v && v->integer())
    if (const char* n = fileTypeName(*v->integer())) name = n;
  if (name.empty() && !types.empty()) {
    const auto most = std::max_element(
        types.begin(), types.end(),
        [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
    name = ggmlTypeName(most->first) + "-like";
  }
  std::string out = "GGUF " + name + ":";
  for (std::size_t i = 0; i < types.size(); ++i)
    out += (i == 0 ? " " : ", ") + std::to_string(types[i].second.first) + " " +
           ggmlTypeName(types[i].first);
  out += " tensors, " + sizeText(bytes);
  const bool allF32 =
      types.size() == 1 && types.front().first == static_cast<uint32_t>(GgmlType::F32);
  return out + (allF32 ? "; float32" : "; dequantized to float32 at load");
}

std::shared_ptr<Model> openGgufModel(const std::string& path, const std::string& name,
                                     uint64_t memoryLimitBytes) {
  const GgufFile file = GgufFile::open(path);  // its messages name the path
  if (file.tensors().empty())
    throw Error(ErrorKind::Format, path +
                                       ": a vocabulary-only GGUF file (no tensors): it opens for "
                                       "`attnscope-cli tokenize --model FILE` only");
  // GgufModel's messages start "gguf: "; the user needs to know which file.
  const auto named = [&](auto&& f) {
    try {
      return f();
    } catch (const Error& e) {
      std::string what = e.what();
      if (what.rfind("gguf: ", 0) == 0) what.erase(0, 6);
      throw Error(e.kind(), path + ": " + what);
    }
  };
  const GgufModel model = named([&] { return GgufModel(file); });
  // Before anything is allocated: every weight becomes 4 bytes, whatever the file stores.
  const uint64_t weights = model.float32Bytes();
  if (weights > memoryLimitBytes)
    throw Error(ErrorKind::ResourceLimit,
                path + ": its weights dequantized to float32 need " + formatBytes(weights) +
                    " (4 bytes a weight), more than the memory limit of " +
                    formatBytes(memoryLimitBytes) +
                    " (raise --memory-limit, or Edit › Memory Limit in the window)");
  // tokenizerFromGguf's messages name the file already.
  FolderTokenizer tokenizer = FolderTokenizer::fromHf(
      tokenizerFromGguf(named([&] { return readGgufVocabulary(file, path); })), path);
  const std::string fileName = std::filesystem::path(path).filename().string();
  SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::fromMemory(
      named([&] { return model.float32Safetensors(memoryLimitBytes); }), fileName);
  FolderParts parts{ConfigReader(model.config(), path + " (its metadata as config.json)"),
                    std::move(tokenizer), std::move(checkpoint), ggufTypeSummary(file)};
  // Every architecture GgufModel maps is the Llama family's (model_type llama, qwen2, qwen3).
  return openLlamaParts(std::move(parts), name);
}

std::string ggufArchitectures() { return GgufModel::supportedArchitectures(); }

std::string ggufTensorTypes() { return readableGgmlTypes(); }

}  // namespace attnscope
