// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "attnscope/model_spec.h"

namespace attnscope::gui {

/// The core's ModelSpec has no operator==; the document and the worker's model cache both need one.
inline bool sameToyConfig(const ToyConfig& a, const ToyConfig& b) {
  return a.variant == b.variant && a.inputDim == b.inputDim && a.dModel == b.dModel &&
         a.heads == b.heads && a.mask == b.mask && a.scale == b.scale &&
         a.tokenizer == b.tokenizer && a.seed == b.seed;
}

inline bool sameModelSpec(const ModelSpec& a, const ModelSpec& b) {
  // The toy config only matters for the toy model; other sources ignore it.
  return a.source == b.source && (a.source != "toy" || sameToyConfig(a.toy, b.toy));
}

}  // namespace attnscope::gui
