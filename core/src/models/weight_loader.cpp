// SPDX-License-Identifier: GPL-3.0-or-later
#include "models/weight_loader.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "attnscope/error.h"
#include "attnscope/float_tensor.h"
#include "nn/packed_weights.h"

namespace attnscope {
namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool ignored(const WeightRules& rules, const std::string& name) {
  if (contains(rules.ignoredNames, name)) return true;
  for (const std::string& p : rules.ignoredPrefixes)
    if (name.compare(0, p.size(), p) == 0) return true;
  return std::any_of(rules.ignoredSuffixes.begin(), rules.ignoredSuffixes.end(),
                     [&](const std::string& s) { return endsWith(name, s); });
}

/// The prefix the checkpoint's names carry: the first of rules.prefixes under which some
/// parameter is found, else none.
std::string detectPrefix(const torch::nn::Module& module, const SafetensorsCheckpoint& checkpoint,
                         const WeightRules& rules) {
  const auto params = module.named_parameters(/*recurse=*/true);
  for (const std::string& prefix : rules.prefixes) {
    for (const auto& p : params) {
      if (checkpoint.find(prefix + p.key())) return prefix;
    }
  }
  return {};
}

/// The tensor of one entry, without a copy where the dtype and alignment allow it.
torch::Tensor tensorOf(const SafetensorsCheckpoint::Entry& e, bool map) {
  const TensorInfo& info = *e.info;
  torch::ScalarType type = torch::kFloat;
  switch (info.dtype) {
    case DType::F32:
      type = torch::kFloat;
      break;
    case DType::F16:
      type = torch::kHalf;
      break;
    case DType::BF16:
      type = torch::kBFloat16;
      break;
    case DType::F64:
      type = torch::kDouble;
      break;
    default:
      break;
  }
  const uint8_t* data = e.file->rawData(info);
  const bool aligned = reinterpret_cast<uintptr_t>(data) % byteSize(info.dtype) == 0;
  // The file's bytes, read-only: nothing may write through this view.
  const torch::Tensor view =
      torch::from_blob(const_cast<uint8_t*>(data), info.shape, torch::TensorOptions().dtype(type));
  if (type == torch::kDouble || !map) return view.to(torch::kFloat);  // to() copies (a new tensor)
  return aligned ? view : view.clone();
}

/// Sets `target` to the packed tensor of its name (under the prefix or without it, or a tied
/// alternate's), after checking the float32 shape it stands for. False when there is none.
bool loadPacked(torch::Tensor& target, const std::string& param, const std::string& prefix,
                const PackedWeights& packed, const WeightRules& rules,
                const std::string& configSummary) {
  std::vector<std::string> names = {prefix + param, param};
  for (const auto& [name, alternate] : rules.tied)
    if (name == param) names.insert(names.end(), {prefix + alternate, alternate});
  for (const std::string& name : names) {
    const torch::Tensor* t = packed.find(name);
    if (!t) continue;
    const auto layout = packedLayout(*t);
    const std::vector<int64_t> want(target.sizes().begin(), target.sizes().end());
    const std::vector<int64_t> have = layout->transposed
                                          ? std::vector<int64_t>{layout->columns, layout->rows}
                                          : std::vector<int64_t>{layout->rows, layout->columns};
    if (have != want)
      throw Error(ErrorKind::Format, "tensor '" + name + "' has shape " +
                                         FloatTensor::formatShape(have) +
                                         " but the configuration (" + configSummary + ") implies " +
                                         FloatTensor::formatShape(want));
    target.set_data(*t);  // the module's own handle now shares the file's blocks
    return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> loadWeights(torch::nn::Module& module,
                                     const SafetensorsCheckpoint& checkpoint,
                                     const WeightRules& rules, const std::string& configSummary,
                                     const PackedWeights* packed) {
  torch::NoGradGuard noGrad;
  const std::string prefix = detectPrefix(module, checkpoint, rules);
  std::set<std::string> used;
  for (auto& p : module.named_parameters(/*recurse=*/true)) {
    std::string key = prefix + p.key();
    const SafetensorsCheckpoint::Entry* e = checkpoint.find(key);
    if (!e && !prefix.empty() && (e = checkpoint.find(p.key()))) key = p.key();
    for (const auto& [param, alternate] : rules.tied) {
      if (e || param != p.key()) continue;
      for (const std::string& name : {prefix + alternate, alternate}) {
        if ((e = checkpoint.find(name))) {
          key = name;
          break;
        }
      }
    }
    if (!e && packed && loadPacked(p.value(), p.key(), prefix, *packed, rules, configSummary))
      continue;
    if (!e)
      throw Error(ErrorKind::Format,
                  "missing tensor '" + key + "' in the weights (" + configSummary + ")");
    const TensorInfo& info = *e->info;
    if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16 &&
        info.dtype != DType::F64) {
      throw Error(ErrorKind::Format, "tensor '" + key + "' in " + e->fileName + " has dtype " +
                                         toString(info.dtype) +
                                         "; weights must be F32, F16 or BF16");
    }
    torch::Tensor& target = p.value();
    const std::vector<int64_t> want(target.sizes().begin(), target.sizes().end());
    if (info.shape != want) {
      throw Error(ErrorKind::Format, "tensor '" + key + "' in " + e->fileName + " has shape " +
                                         FloatTensor::formatShape(info.shape) +
                                         " but the configuration (" + configSummary + ") implies " +
                                         FloatTensor::formatShape(want));
    }
    const torch::Tensor value = tensorOf(*e, rules.mapWeights);
    if (rules.mapWeights) {
      target.set_data(value);  // the module's own handle now shares the file's memory
    } else {
      target.copy_(value);
    }
    used.insert(key);
  }
  std::vector<std::string> ignoredNames;
  for (const auto& [name, entry] : checkpoint.entries()) {
    if (used.count(name)) continue;
    const std::string bare =
        name.compare(0, prefix.size(), prefix) == 0 ? name.substr(prefix.size()) : name;
    if (ignored(rules, bare) || ignored(rules, name)) continue;
    if (rules.ignoreUnexpected) {
      ignoredNames.push_back(name);
      continue;
    }
    throw Error(ErrorKind::Format, "unexpected tensor '" + name + "' in " + entry.fileName +
                                       ": not part of a " + rules.family + " with " +
                                       configSummary);
  }
  return ignoredNames;
}

}  // namespace attnscope
