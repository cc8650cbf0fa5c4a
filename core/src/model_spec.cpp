// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/model_spec.h"

#include "attnscope/error.h"

namespace attnscope {

std::shared_ptr<Model> openModel(const ModelSpec& spec) {
  if (spec.source == "toy") return makeToyModel(spec.toy);
  throw Error(ErrorKind::InvalidArgument, "unknown model '" + spec.source + "' (choose toy)");
}

}  // namespace attnscope
