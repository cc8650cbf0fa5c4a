// SPDX-License-Identifier: GPL-3.0-or-later
// Tiny-GPT checkpoints: safetensors whose __metadata__ carries the config and the vocabulary.
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include "attnscope/error.h"
#include "attnscope/safetensors.h"
#include "attnscope/tiny_gpt.h"
#include "models/tiny_gpt_state.h"
#include "models/weight_loader.h"
#include "nn/state_dict.h"

namespace attnscope {
namespace {

std::string metadataOr(const std::map<std::string, std::string>& m, const std::string& key,
                       const std::string& path) {
  const auto it = m.find(key);
  if (it == m.end()) {
    throw Error(ErrorKind::Format,
                path + ": not a tiny-gpt checkpoint (no '" + key + "' in __metadata__)");
  }
  return it->second;
}

}  // namespace

TinyGpt TinyGpt::load(const std::string& path) {
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::openFile(path);
  const auto& meta = checkpoint.metadata();
  if (metadataOr(meta, "attnscope.kind", path) != "tiny-gpt") {
    throw Error(ErrorKind::Format,
                path + ": attnscope.kind is '" + meta.at("attnscope.kind") + "', not 'tiny-gpt'");
  }
  TinyGptConfig c;
  std::vector<std::string> vocab;
  try {
    const auto cfg = nlohmann::json::parse(metadataOr(meta, "attnscope.config", path));
    c.nLayer = cfg.at("n_layer").get<int>();
    c.nHead = cfg.at("n_head").get<int>();
    c.nEmbd = cfg.at("n_embd").get<int>();
    c.blockSize = cfg.at("block_size").get<int>();
    c.vocabSize = cfg.at("vocab_size").get<int>();
    vocab = nlohmann::json::parse(metadataOr(meta, "attnscope.vocab", path))
                .get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Format, path + ": bad attnscope.config or attnscope.vocab: " + e.what());
  }
  if (static_cast<int>(vocab.size()) != c.vocabSize) {
    throw Error(ErrorKind::Format, path + ": vocab_size is " + std::to_string(c.vocabSize) +
                                       " but the vocabulary has " + std::to_string(vocab.size()) +
                                       " characters");
  }
  std::shared_ptr<State> s;
  try {
    s = TinyGpt::State::make(c, vocab);
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  WeightRules rules;
  rules.family = "tiny GPT";
  // The chapter's Head registers its causal mask as a buffer `tril`: not a weight.
  rules.ignoredSuffixes = {".tril"};
  // Training writes the weights, so they are float32 copies, not views of the read-only file.
  rules.mapWeights = false;
  try {
    loadWeights(*s->module, checkpoint, rules, c.describe());
  } catch (const Error& e) {
    throw Error(ErrorKind::Format, path + ": " + e.what());
  }
  return TinyGpt(s);
}

TinyGpt TinyGpt::open(const std::string& source) {
  if (source != "default") return load(source);
  const std::string path = defaultModelPath();
  if (path.empty()) {
    throw Error(ErrorKind::Unavailable,
                "the bundled model resources/models/tiny-shakespeare.safetensors was not found "
                "(set ATTNSCOPE_DEFAULT_MODEL to its path)");
  }
  return load(path);
}

void TinyGpt::save(const std::string& path) const {
  const TinyGptConfig& c = m_state->config;
  const nlohmann::json cfg = {{"n_layer", c.nLayer},
                              {"n_head", c.nHead},
                              {"n_embd", c.nEmbd},
                              {"block_size", c.blockSize},
                              {"vocab_size", c.vocabSize}};
  std::lock_guard<std::mutex> lock(m_state->mutex);
  writeSafetensors(path, stateDict(*m_state->module),
                   {{"attnscope.kind", "tiny-gpt"},
                    {"attnscope.config", cfg.dump()},
                    {"attnscope.vocab", nlohmann::json(m_state->vocab).dump()}});
}

std::string defaultModelPath() {
  namespace fs = std::filesystem;
  const char* name = "tiny-shakespeare.safetensors";
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("ATTNSCOPE_DEFAULT_MODEL")) candidates.emplace_back(env);
  // Next to the executable: <prefix>/bin/../share/attnscope/models when installed; in a build
  // tree the executables sit one to three folders below <build>/share (see resources/).
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    fs::path dir = fs::path(exe).parent_path();
    for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
      candidates.push_back(dir / "share/attnscope/models" / name);
      candidates.push_back(dir / "../share/attnscope/models" / name);
      if (dir == dir.parent_path()) break;
    }
  }
  for (const fs::path& p : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return {};
}

}  // namespace attnscope
