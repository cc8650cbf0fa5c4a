// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/model_catalog.h"

#include "attnscope/error.h"
#include "io/file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace attnscope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRepoPrefix = "models--";

bool hasConfig(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.json", ec);
}

// Cache files are small; anything that is not a regular file (a FIFO would block) reads as empty.
std::string readSmallFile(const fs::path& path) {
  try {
    return readFile(path.string(), kMaxConfigBytes);
  } catch (const Error&) {
    return {};
  }
}

std::string trim(std::string s) {
  const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

/// The snapshot of one models--org--name folder: refs/main when it names a snapshot with a
/// config.json, else the most recently modified snapshot that has one.
std::optional<fs::path> pickSnapshot(const fs::path& repoDir) {
  std::error_code ec;
  const std::string ref = trim(readSmallFile(repoDir / "refs" / "main"));
  if (!ref.empty() && ref.find('/') == std::string::npos) {
    const fs::path snap = repoDir / "snapshots" / ref;
    if (hasConfig(snap)) return snap;
  }
  std::optional<fs::path> best;
  fs::file_time_type bestTime{};
  for (fs::directory_iterator it(repoDir / "snapshots", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_directory(ec) || !hasConfig(it->path())) continue;
    const fs::file_time_type t = fs::last_write_time(it->path(), ec);
    if (ec) continue;
    if (!best || t > bestTime) {
      best = it->path();
      bestTime = t;
    }
  }
  return best;
}

/// "models--openai-community--gpt2" -> "openai-community/gpt2"; "models--gpt2" -> "gpt2".
std::string repoName(const std::string& folder) {
  std::string rest = folder.substr(std::string(kRepoPrefix).size());
  std::string out;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest.compare(i, 2, "--") == 0) {
      out += '/';
      ++i;
    } else {
      out += rest[i];
    }
  }
  return out;
}

std::string modelTypeOf(const fs::path& snapshot) {
  const nlohmann::json j = nlohmann::json::parse(readSmallFile(snapshot / "config.json"), nullptr,
                                                 /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("model_type") && j["model_type"].is_string()) {
    return j["model_type"].get<std::string>();
  }
  return {};
}

}  // namespace

std::vector<std::string> huggingFaceCacheDirs() {
  std::vector<std::string> dirs;
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  // huggingface_hub's order: HF_HUB_CACHE, its older name HUGGINGFACE_HUB_CACHE, HF_HOME/hub,
  // and HF_HOME's default $XDG_CACHE_HOME/huggingface (XDG's default ~/.cache). The first is where
  // a download goes; all are searched, so a model fetched under other settings is still found.
  const auto add = [&dirs](const std::string& dir) {
    if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  add(env("HF_HUB_CACHE"));
  add(env("HUGGINGFACE_HUB_CACHE"));
  if (!env("HF_HOME").empty()) add((fs::path(env("HF_HOME")) / "hub").string());
  if (!env("XDG_CACHE_HOME").empty())
    add((fs::path(env("XDG_CACHE_HOME")) / "huggingface" / "hub").string());
  if (!env("HOME").empty())
    add((fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string());
  return dirs;
}

std::vector<CachedModel> findCachedModels() {
  std::vector<CachedModel> found;
  std::set<std::string> names;
  for (const std::string& cache : huggingFaceCacheDirs()) {
    std::error_code ec;
    for (fs::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string folder = it->path().filename().string();
      if (folder.rfind(kRepoPrefix, 0) != 0 || !it->is_directory(ec)) continue;
      const std::string name = repoName(folder);
      if (names.count(name)) continue;
      if (const auto snap = pickSnapshot(it->path())) {
        names.insert(name);
        CachedModel m;
        m.name = name;
        m.path = snap->string();
        m.modelType = modelTypeOf(*snap);
        found.push_back(std::move(m));
      }
    }
  }
  std::sort(found.begin(), found.end(),
            [](const CachedModel& a, const CachedModel& b) { return a.name < b.name; });
  return found;
}

std::optional<std::string> resolveCachedModel(const std::string& name) {
  if (name.empty()) return std::nullopt;
  const std::vector<CachedModel> models = findCachedModels();
  for (const CachedModel& m : models) {
    if (m.name == name) return m.path;
  }
  // A bare name also finds the model under an organisation: "gpt2" -> "openai-community/gpt2".
  if (name.find('/') == std::string::npos) {
    for (const CachedModel& m : models) {
      const std::size_t slash = m.name.rfind('/');
      if (slash != std::string::npos && m.name.substr(slash + 1) == name) return m.path;
    }
  }
  return resolveGgufModel(name);
}

}  // namespace attnscope
