// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/toy_config.h"

#include "attnscope/error.h"
#include "attnscope/run_request.h"

namespace attnscope {
namespace {

// Widths above this are certainly typos and would allocate gigabytes of weights.
constexpr int kMaxWidth = 65536;

void requirePositive(int value, const char* name) {
  if (value <= 0) {
    throw Error(ErrorKind::InvalidArgument,
                std::string(name) + " must be positive (got " + std::to_string(value) + ")");
  }
  if (value > kMaxWidth) {
    throw Error(ErrorKind::InvalidArgument, std::string(name) + " must be at most " +
                                                std::to_string(kMaxWidth) + " (got " +
                                                std::to_string(value) + ")");
  }
}

[[noreturn]] void unknown(const std::string& what, const std::string& value, const char* choices) {
  throw Error(ErrorKind::InvalidArgument,
              "unknown " + what + " '" + value + "' (choose " + choices + ")");
}

}  // namespace

void ToyConfig::validate() const {
  requirePositive(inputDim, "input_dim");
  requirePositive(dModel, "d_model");
  requirePositive(heads, "heads");
  if (dModel % heads != 0) {
    throw Error(ErrorKind::InvalidArgument, "heads (" + std::to_string(heads) +
                                                ") must divide d_model (" + std::to_string(dModel) +
                                                ")");
  }
}

const char* toString(Variant v) { return v == Variant::Fused ? "fused" : "per-head"; }
const char* toString(MaskKind m) { return m == MaskKind::None ? "none" : "causal"; }
const char* toString(ScaleKind s) { return s == ScaleKind::HeadSize ? "head" : "embd"; }
const char* toString(TokenizerKind t) { return t == TokenizerKind::Char ? "char" : "word"; }
const char* toString(DeviceKind d) {
  switch (d) {
    case DeviceKind::Auto:
      return "auto";
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Cuda:
      return "cuda";
  }
  return "auto";
}

Variant parseVariant(const std::string& s) {
  if (s == "fused") return Variant::Fused;
  if (s == "per-head" || s == "perhead") return Variant::PerHead;
  unknown("variant", s, "fused or per-head");
}
MaskKind parseMask(const std::string& s) {
  if (s == "none") return MaskKind::None;
  if (s == "causal") return MaskKind::Causal;
  unknown("mask", s, "none or causal");
}
ScaleKind parseScale(const std::string& s) {
  if (s == "head") return ScaleKind::HeadSize;
  if (s == "embd") return ScaleKind::Embedding;
  unknown("scale", s, "head or embd");
}
TokenizerKind parseTokenizer(const std::string& s) {
  if (s == "char") return TokenizerKind::Char;
  if (s == "word") return TokenizerKind::Word;
  unknown("tokenizer", s, "char or word");
}
DeviceKind parseDevice(const std::string& s) {
  if (s == "auto") return DeviceKind::Auto;
  if (s == "cpu") return DeviceKind::Cpu;
  if (s == "cuda") return DeviceKind::Cuda;
  unknown("device", s, "auto, cpu or cuda");
}

}  // namespace attnscope
