// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/model.h"
#include "attnscope/toy_config.h"

namespace attnscope {

/// Which model to open, as the CLI's --model and the GUI's model menu say it.
struct ModelSpec {
  /// "toy": the configurable layer below; "default": the bundled trained tiny GPT;
  /// a path to a .safetensors checkpoint; a Hugging Face model folder; a GGUF file of any name
  /// (isGgufFile); or a cached model name ("gpt2", "distilgpt2").
  std::string source = "toy";
  ToyConfig toy;  // used when source == "toy"
  /// Opening refuses, before allocating, a model whose weights alone are estimated above this.
  uint64_t memoryLimitBytes = 8ull * 1024 * 1024 * 1024;
};

/// Opens the model a spec names. Throws Error: InvalidArgument for an unknown name, Io/Format for
/// unreadable or malformed files.
std::shared_ptr<Model> openModel(const ModelSpec& spec);

/// Whether `path` is a file that starts with GGUF's magic bytes, whatever it is called (Ollama's
/// blobs have no extension, some projects ship model.bin). False when unreadable.
bool isGgufFile(const std::string& path);

}  // namespace attnscope
