// SPDX-License-Identifier: GPL-3.0-or-later
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/model_catalog.h"
#include "attnscope/model_registry.h"
#include "attnscope/result_json.h"
#include "attnscope/runtime.h"
#include "commands.h"

namespace attnscope::cli {

int modelsCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli models",
              "List the architectures attnscope opens (by config.json's model_type, and GGUF "
              "files by general.architecture), the cached Hugging Face models and the GGUF "
              "models of Ollama, LM Studio, llama.cpp and the Hugging Face cache, each marked "
              "with whether it can be opened (--model takes the name or the id).");
  p.flag("--json", "print JSON instead of text");
  p.parse(args);
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  const std::vector<CachedModel> cached = findCachedModels();
  const std::vector<CachedModel> gguf = findGgufModels();
  if (p.has("--json")) {
    nlohmann::json j = {{"architectures", nlohmann::json::array()},
                        {"cached", nlohmann::json::array()},
                        {"runtime", runtimeDescription()}};
    for (const Architecture& a : supportedArchitectures()) {
      j["architectures"].push_back(
          {{"model_type", a.modelType}, {"family", a.family}, {"description", a.description}});
    }
    j["gguf"] = {
        {"architectures", ggufArchitectures()},
        {"family", "llama"},
        {"types", ggufTensorTypes()},
        {"note", "kept quantized: needs the file's size plus one layer's weights in float32"}};
    for (const CachedModel& m : cached) {
      const Architecture* a = findArchitecture(m.modelType);
      j["cached"].push_back({{"name", m.name},
                             {"path", m.path},
                             {"model_type", m.modelType},
                             {"supported", a != nullptr},
                             {"family", a ? a->family : ""}});
    }
    j["gguf_models"] = nlohmann::json::array();
    for (const CachedModel& m : gguf) {
      j["gguf_models"].push_back({{"name", m.name},
                                  {"id", m.id},
                                  {"store", m.store},
                                  {"path", m.path},
                                  {"architecture", m.modelType},
                                  {"file_type", m.fileType},
                                  {"supported", m.supported},
                                  {"error", m.error}});
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::printf("built in:\n  %-12s %-10s %s\n  %-12s %-10s %s\n", "toy", "toy",
              "the tutorial's fused / the textbook's per-head attention layer, seeded weights",
              "default", "tiny-gpt", "the bundled character-level GPT trained on Tiny Shakespeare");
  std::printf("Hugging Face folders, by config.json model_type:\n");
  for (const Architecture& a : supportedArchitectures()) {
    std::printf("  %-12s %-10s %s\n", a.modelType.c_str(), a.family.c_str(), a.description.c_str());
  }
  std::printf(
      "GGUF files (any name, by their magic bytes):\n  %-12s %-10s %s; types %s; "
      "kept quantized (the file's size plus one layer in float32)\n",
      "gguf", "llama", ("general.architecture " + ggufArchitectures()).c_str(),
      ggufTensorTypes().c_str());
  std::printf("cached models (%zu):\n", cached.size());
  for (const CachedModel& m : cached) {
    const bool ok = findArchitecture(m.modelType) != nullptr;
    std::printf("  %-40s %-12s %s\n", m.name.c_str(),
                m.modelType.empty() ? "?" : m.modelType.c_str(), ok ? "opens" : "not supported");
  }
  std::printf("GGUF models (%zu; Ollama, LM Studio, llama.cpp, Hugging Face cache):\n",
              gguf.size());
  for (const CachedModel& m : gguf) {
    const std::string status = !m.error.empty() ? "unreadable: " + m.error
                               : m.supported    ? "opens as --model " + m.id
                                                : "not supported";
    std::printf("  %-40s %-12s %s\n", m.name.c_str(),
                m.modelType.empty() ? "?" : m.modelType.c_str(), status.c_str());
  }
  std::printf("runtime: %s\n", runtimeDescription().c_str());
  return 0;
}

}  // namespace attnscope::cli
