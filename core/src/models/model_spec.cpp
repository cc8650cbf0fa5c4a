// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/model_spec.h"

#include <filesystem>

#include "attnscope/error.h"
#include "attnscope/model_catalog.h"
#include "attnscope/tiny_gpt.h"
#include "io/gguf_file.h"
#include "models/gguf_opener.h"
#include "models/model_registry.h"
#include "runtime/torch_errors.h"

namespace attnscope {
namespace {

std::string folderName(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();  // "models/gpt2/"
  return p.filename().string();
}

std::shared_ptr<Model> openUnguarded(const ModelSpec& spec) {
  const std::string& source = spec.source;
  if (source == "toy") {
    // From the configuration alone: 65536-wide layers would allocate 64 GiB while building.
    spec.toy.checkMemory(spec.memoryLimitBytes);
    return makeToyModel(spec.toy);
  }

  if (source == "default") return TinyGpt::open(source).asModel("tiny-shakespeare (bundled)");
  const std::filesystem::path file(source);
  // By content, before any extension is trusted: GGUF files come as blobs and model.bin too.
  if (isGgufFile(source))
    return openGgufModel(source, file.filename().string(), spec.memoryLimitBytes);
  if (file.extension() == ".safetensors")
    return TinyGpt::load(source).asModel(file.filename().string());

  std::error_code ec;
  if (std::filesystem::is_directory(source, ec))
    return openModelFolder(source, folderName(source), spec.memoryLimitBytes);
  if (const auto cached = resolveCachedModel(source)) {
    // A GGUF model of a local store ("ollama:llama3.2:1b"), named as the user named it.
    if (isGgufFile(*cached)) return openGgufModel(*cached, source, spec.memoryLimitBytes);
    return openModelFolder(*cached, source, spec.memoryLimitBytes);
  }

  std::string searched;
  for (const std::string& dir : huggingFaceCacheDirs())
    searched += (searched.empty() ? "" : ", ") + dir;
  throw Error(ErrorKind::InvalidArgument,
              "model '" + source +
                  "' not found: not a folder, and not in the Hugging Face cache (searched: " +
                  (searched.empty() ? std::string("no cache folder: HOME is not set") : searched) +
                  "); choose toy, default, a tiny-GPT .safetensors file, a model folder, a GGUF "
                  "file, a cached model name such as gpt2, or a GGUF model of Ollama, LM Studio "
                  "or llama.cpp such as ollama:llama3.2:1b (attnscope-cli models lists them)");
}

}  // namespace

bool isGgufFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && GgufFile::hasMagic(path);
}

std::shared_ptr<Model> openModel(const ModelSpec& spec) {
  // Building modules and reading weights allocate through LibTorch: its out-of-memory error
  // becomes one line, not a backtrace.
  return withTorchErrors("opening model '" + spec.source + "'",
                         [&] { return openUnguarded(spec); });
}

}  // namespace attnscope
