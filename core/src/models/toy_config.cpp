// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/toy_config.h"

#include <cstdio>

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

uint64_t ToyConfig::parameterBytes() const {
  const uint64_t in = static_cast<uint64_t>(inputDim), d = static_cast<uint64_t>(dModel);
  // fused: qkv_layer (in -> 3d, with bias) and linear_layer (d -> d); per-head: key, query and
  // value of every head (in -> d in all, no bias) and proj (d -> d).
  const uint64_t count =
      variant == Variant::Fused ? in * 3 * d + 3 * d + d * d + d : 3 * in * d + d * d + d;
  return count * 4;
}

void ToyConfig::checkMemory(uint64_t limitBytes) const {
  validate();
  const uint64_t bytes = parameterBytes();
  if (bytes <= limitBytes) return;
  const auto gib = [](uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
    return std::string(buf);
  };
  throw Error(ErrorKind::ResourceLimit, "the toy layer's weights (input_dim " +
                                            std::to_string(inputDim) + ", d_model " +
                                            std::to_string(dModel) + ") need about " + gib(bytes) +
                                            ", more than the memory limit of " + gib(limitBytes) +
                                            " (use smaller sizes, or raise --memory-limit)");
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
