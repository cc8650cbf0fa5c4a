// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/model_spec.h"

#include <filesystem>

#include "attnscope/error.h"
#include "attnscope/tiny_gpt.h"

namespace attnscope {

std::shared_ptr<Model> openModel(const ModelSpec& spec) {
  if (spec.source == "toy") return makeToyModel(spec.toy);
  if (spec.source == "default") {
    const std::string path = defaultModelPath();
    if (path.empty()) {
      throw Error(ErrorKind::Unavailable,
                  "the bundled model resources/models/tiny-shakespeare.safetensors was not found "
                  "(set ATTNSCOPE_DEFAULT_MODEL to its path)");
    }
    return TinyGpt::load(path).asModel("tiny-shakespeare (bundled)");
  }
  const std::filesystem::path p(spec.source);
  if (p.extension() == ".safetensors") {
    return TinyGpt::load(spec.source).asModel(p.filename().string());
  }
  throw Error(ErrorKind::InvalidArgument,
              "unknown model '" + spec.source + "' (choose toy, default or a .safetensors checkpoint)");
}

}  // namespace attnscope
