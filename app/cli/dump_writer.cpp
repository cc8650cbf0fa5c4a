// SPDX-License-Identifier: GPL-3.0-or-later
#include "dump_writer.h"

#include <filesystem>

#include "attnscope/error.h"
#include "attnscope/npy.h"
#include "attnscope/result_json.h"
#include "attnscope/safetensors.h"

namespace attnscope::cli {

void writeDump(const std::string& dir, const AttentionResult& result, const Model& model) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error(ErrorKind::Io, "cannot create --dump folder " + dir + ": " +
                                   (ec ? ec.message() : std::string("not a directory")));
  }
  const auto at = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  writeNpy(at("input.npy"), result.input);
  if (!result.contextInput.empty()) writeNpy(at("context.npy"), result.contextInput);
  writeSafetensors(at("weights.safetensors"), model.parameters());
  writeNpy(at("attention.npy"), result.group().attention);
  writeNpy(at("output.npy"), result.output);
  writeTextFile(at("trace.json"), traceJson(result));
  writeTextFile(at("tokens.json"), tokensJson(result));
}

}  // namespace attnscope::cli
