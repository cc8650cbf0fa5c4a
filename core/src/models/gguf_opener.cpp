// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/gguf_opener.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <utility>
#include <vector>

#include "attnscope/error.h"
#include "attnscope/model_registry.h"
#include "io/gguf_vocabulary_reader.h"
#include "models/bert.h"
#include "models/decoder_models.h"
#include "models/folder_parts.h"
#include "models/gguf_model.h"
#include "models/gpt2.h"
#include "nn/packed_weights.h"
#include "runtime/batch_input.h"
#include "tokenizers/gguf_vocabulary.h"

namespace attnscope {
namespace {

std::string sizeText(uint64_t bytes) {
  char buf[32];
  if (bytes >= 100000000)
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// The files of a model split like llama.cpp's gguf-split writes it ("NAME-00001-of-00003.gguf",
// ...), in order; {path} for any other file. A later part is refused naming the first, which
// holds the metadata.
std::vector<std::string> splitParts(const std::string& path) {
  static const std::regex split("^(.*)-(\\d{5})-of-(\\d{5})(\\.gguf)$", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(path, m, split)) return {path};
  const int no = std::stoi(m[2].str()), count = std::stoi(m[3].str());
  if (count < 2 || no < 1 || no > count) return {path};
  const auto part = [&](int i) {
    char middle[32];
    std::snprintf(middle, sizeof middle, "-%05d-of-%05d", i, count);
    return m[1].str() + middle + m[4].str();
  };
  if (no != 1)
    throw Error(ErrorKind::Format, path + ": part " + std::to_string(no) + " of " +
                                       std::to_string(count) +
                                       " of a split model; open its first part, " + part(1));
  std::vector<std::string> parts;
  for (int i = 1; i <= count; ++i) parts.push_back(part(i));
  return parts;
}

}  // namespace

std::string ggufTypeSummary(const std::vector<const GgufFile*>& parts) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> byType;  // type -> {tensors, elements}
  uint64_t bytes = 0;
  for (const GgufFile* file : parts)
    for (const GgufTensorInfo& t : file->tensors()) {
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
  std::string out = "GGUF " + GgufModel::fileTypeName(*parts.front()) + ":";
  for (std::size_t i = 0; i < types.size(); ++i)
    out += (i == 0 ? " " : ", ") + std::to_string(types[i].second.first) + " " +
           ggmlTypeName(types[i].first);
  out += " tensors, " + sizeText(bytes);
  const bool allF32 =
      types.size() == 1 && types.front().first == static_cast<uint32_t>(GgmlType::F32);
  return out + (allF32 ? "; float32" : "; kept quantized, dequantized per layer as it runs");
}

std::shared_ptr<Model> openGgufModel(const std::string& path, const std::string& name,
                                     uint64_t memoryLimitBytes) {
  // Shared: the packed weights view their bytes for as long as the model lives. Reserved first:
  // the model points into the vector. GgufFile::open's messages name the part.
  const std::vector<std::string> paths = splitParts(path);
  auto files = std::make_shared<std::vector<GgufFile>>();
  files->reserve(paths.size());
  for (const std::string& p : paths) files->push_back(GgufFile::open(p));
  std::vector<const GgufFile*> ggufParts;
  for (const GgufFile& f : *files) ggufParts.push_back(&f);
  const GgufFile& first = files->front();
  if (paths.size() == 1 && first.tensors().empty())
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
  const GgufModel model = named([&] { return GgufModel(ggufParts); });
  // Before anything is allocated: the matrices stay as the file's blocks, and a layer's are
  // widened to float32 only while it runs; the vectors (norms, biases) are widened at load.
  const uint64_t packed = model.matrixFileBytes(), layer = model.layerFloat32Bytes(),
                 vectors = model.float32Bytes(/*vectorsOnly=*/true);
  if (packed + layer + vectors > memoryLimitBytes)
    throw Error(ErrorKind::ResourceLimit,
                path + ": its weights need " + formatBytes(packed + layer + vectors) + " (" +
                    formatBytes(packed) + " as stored, " + formatBytes(layer) +
                    " for one layer dequantized to float32, " + formatBytes(vectors) +
                    " of norms and biases), more than the memory limit of " +
                    formatBytes(memoryLimitBytes) +
                    " (raise --memory-limit, or Edit › Memory Limit in the window)");
  auto weights = std::make_shared<PackedWeights>(files);
  for (const GgufModel::Tensor& t : model.tensors()) {
    if (!t.matrix()) continue;
    const GgufTensorInfo& info = *t.info;
    const GgmlTypeLayout* type = ggmlTypeLayout(info.type);
    if (!type->readable) {
      // readRows names the tensor, its type and the readable ones.
      std::vector<float> row(info.columns());
      named([&] { return (t.file->readRows(info, 0, 1, row.data()), 0); });
    }
    PackedWeightLayout layout;
    layout.rows = static_cast<int64_t>(info.rows());
    layout.columns = static_cast<int64_t>(info.columns());
    layout.rowBytes = static_cast<int64_t>(info.columns() / type->blockSize * type->blockBytes);
    layout.permutedHeads = t.permutedHeads;
    layout.qkvHeads = t.qkvHeads;
    layout.transposed = t.transposed;
    layout.typeName = type->name;
    layout.unpack = [ggml = static_cast<GgmlType>(info.type)](const uint8_t* src, float* dst,
                                                              int64_t count) {
      dequantizeValues(ggml, src, dst, static_cast<uint64_t>(count));
    };
    weights->add(t.hfName, t.file->tensorData(info), std::move(layout));
  }
  // tokenizerFromGguf's messages name the file already.
  FolderTokenizer tokenizer = FolderTokenizer::fromHf(
      tokenizerFromGguf(named([&] { return readGgufVocabulary(first, path); })), path);
  const std::string fileName = std::filesystem::path(path).filename().string();
  SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::fromMemory(
      named([&] { return model.float32Safetensors(memoryLimitBytes, /*vectorsOnly=*/true); }),
      fileName);
  FolderParts parts{ConfigReader(model.config(), path + " (its metadata as config.json)"),
                    std::move(tokenizer), std::move(checkpoint), ggufTypeSummary(ggufParts),
                    std::move(weights)};
  // The family of the config.json GgufModel wrote.
  const std::string type = model.config()["model_type"].get<std::string>();
  if (type == "gpt2") return openGpt2Parts(std::move(parts), name);
  if (type == "gpt_neox") return openGptNeoxParts(std::move(parts), name);
  if (type == "bloom") return openBloomParts(std::move(parts), name);
  if (type == "bert") return openBertParts(std::move(parts), name);
  if (type == "gemma2" || type == "gemma3_text") return openGemma2Parts(std::move(parts), name);
  if (type == "phi3") return openPhi3Parts(std::move(parts), name);
  return openLlamaParts(std::move(parts), name);  // llama, qwen2, qwen3, gemma
}

std::string ggufArchitectures() { return GgufModel::supportedArchitectures(); }

std::string ggufTensorTypes() { return readableGgmlTypes(); }

}  // namespace attnscope
