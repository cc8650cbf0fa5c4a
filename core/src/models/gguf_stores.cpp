// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF models where local runners keep them (Ollama, LM Studio, llama.cpp, the Hugging Face
// cache): findGgufModels and resolveGgufModel of attnscope/model_catalog.h.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <regex>
#include <set>

#include "attnscope/error.h"
#include "attnscope/model_catalog.h"
#include "io/file_io.h"
#include "io/gguf_file.h"
#include "models/gguf_model.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

std::string envVar(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

fs::path homeDir() { return fs::path(envVar("HOME")); }

bool isGgufName(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".gguf";
}

// Parts 2.. of a split model ("-00002-of-00003.gguf"): the first part stands for the model.
bool isLaterSplitPart(const std::string& fileName) {
  static const std::regex split("-(\\d{5})-of-\\d{5}\\.gguf$", std::regex::icase);
  std::smatch m;
  return std::regex_search(fileName, m, split) && m[1].str() != "00001";
}

// The entry of one file, from its header alone: GgufFile validates the metadata and tensor
// infos against the file's size and maps (never reads) the tensor data.
CachedModel entryOf(const std::string& store, const std::string& id, const std::string& label,
                    const fs::path& path) {
  CachedModel m;
  m.store = store;
  m.id = id;
  m.path = path.string();
  try {
    const GgufFile file = GgufFile::open(m.path);
    if (const GgufValue* arch = file.find("general.architecture"); arch && arch->string())
      m.modelType = *arch->string();
    m.fileType = GgufModel::fileTypeName(file);
    if (file.tensors().empty()) {
      m.error = "a vocabulary-only GGUF file (no tensors)";
    } else {
      const std::string archs = ", " + GgufModel::supportedArchitectures() + ",";
      m.supported =
          !m.modelType.empty() && archs.find(", " + m.modelType + ",") != std::string::npos;
    }
  } catch (const std::exception& e) {  // Error for what the reader refuses, bad_alloc, ...
    m.error = e.what();
  }
  m.name = store + ": " + label + (m.fileType.empty() ? "" : " (" + m.fileType + ")");
  return m;
}

// Every *.gguf under `root`, at most `depth` folders down, in a stable order; symbolic links
// followed (Hugging Face snapshots link to blobs). Unreadable folders are skipped.
void forEachGguf(const fs::path& root, int depth,
                 const std::function<void(const fs::path& file)>& visit) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    entries.push_back(it->path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    if (fs::is_directory(p, ec)) {
      if (depth > 0) forEachGguf(p, depth - 1, visit);
    } else if (isGgufName(p) && fs::is_regular_file(p, ec) &&
               !isLaterSplitPart(p.filename().string())) {
      visit(p);
    }
  }
}

// Ollama's store: manifests/HOST/NAMESPACE/MODEL/TAG, a JSON manifest whose layer of mediaType
// application/vnd.ollama.image.model names the GGUF blob by digest.
void addOllama(std::vector<CachedModel>& out) {
  const fs::path root = envVar("OLLAMA_MODELS").empty() ? homeDir() / ".ollama" / "models"
                                                        : fs::path(envVar("OLLAMA_MODELS"));
  const fs::path manifests = root / "manifests";
  std::error_code ec;
  if (!fs::is_directory(manifests, ec)) return;
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(manifests, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it.depth() == 3 && it->is_regular_file(ec)) files.push_back(it->path());
    if (it.depth() >= 3) it.disable_recursion_pending();
  }
  std::sort(files.begin(), files.end());
  static const std::regex digest("sha256:([0-9a-f]{64})");
  for (const fs::path& manifest : files) {
    const fs::path rel = manifest.lexically_relative(manifests);
    std::vector<std::string> parts;
    for (const fs::path& p : rel) parts.push_back(p.string());
    if (parts.size() != 4) continue;
    const std::string& host = parts[0];
    const std::string& ns = parts[1];
    const std::string model = parts[2] + ":" + parts[3];
    const std::string label = host == "registry.ollama.ai"
                                  ? (ns == "library" ? model : ns + "/" + model)
                                  : host + "/" + ns + "/" + model;
    std::string text;
    try {
      text = readFile(manifest.string(), kMaxConfigBytes);
    } catch (const Error&) {
      continue;  // not a regular file, or too large to be a manifest
    }
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    std::string blob;
    if (j.is_object() && j.contains("layers") && j["layers"].is_array()) {
      for (const nlohmann::json& layer : j["layers"]) {
        std::smatch m;
        if (!layer.is_object() ||
            layer.value("mediaType", "") != "application/vnd.ollama.image.model")
          continue;
        const std::string d = layer.value("digest", "");
        // Only a well-formed digest becomes a path: a manifest cannot point outside blobs/.
        if (std::regex_match(d, m, digest)) blob = "sha256-" + m[1].str();
        break;
      }
    }
    if (blob.empty()) {
      CachedModel bad;
      bad.store = "ollama";
      bad.id = "ollama:" + label;
      bad.name = "ollama: " + label;
      bad.path = manifest.string();
      bad.error = "its manifest names no model blob";
      out.push_back(std::move(bad));
      continue;
    }
    out.push_back(entryOf("ollama", "ollama:" + label, label, root / "blobs" / blob));
  }
}

// LM Studio: PUBLISHER/REPO/FILE.gguf under ~/.lmstudio/models (0.3+) or the older
// ~/.cache/lm-studio/models.
void addLmStudio(std::vector<CachedModel>& out) {
  for (const fs::path& root :
       {homeDir() / ".lmstudio" / "models", homeDir() / ".cache" / "lm-studio" / "models"}) {
    forEachGguf(root, 2, [&](const fs::path& file) {
      const std::string rel = file.lexically_relative(root).generic_string();
      const std::string label =
          file.lexically_relative(root).parent_path().generic_string() + "/" + file.stem().string();
      out.push_back(entryOf("lm studio", "lmstudio:" + rel, label, file));
    });
  }
}

// llama.cpp's download cache (-hf, --model-url): $LLAMA_CACHE, else ~/.cache/llama.cpp.
void addLlamaCpp(std::vector<CachedModel>& out) {
  const fs::path root = envVar("LLAMA_CACHE").empty() ? homeDir() / ".cache" / "llama.cpp"
                                                      : fs::path(envVar("LLAMA_CACHE"));
  forEachGguf(root, 2, [&](const fs::path& file) {
    const fs::path rel = file.lexically_relative(root);
    out.push_back(entryOf("llama.cpp", "llama.cpp:" + rel.generic_string(),
                          (rel.parent_path() / rel.stem()).generic_string(), file));
  });
}

// *.gguf in the Hugging Face caches' snapshots (GGUF repositories have no config.json): the
// snapshot refs/main names, else every snapshot, a file name listed once per repository.
void addHuggingFace(std::vector<CachedModel>& out) {
  for (const std::string& cache : huggingFaceCacheDirs()) {
    std::error_code ec;
    std::vector<fs::path> repos;
    for (fs::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename().string().rfind("models--", 0) == 0) repos.push_back(it->path());
    std::sort(repos.begin(), repos.end());
    for (const fs::path& repo : repos) {
      std::string name = repo.filename().string().substr(8);
      for (std::size_t at; (at = name.find("--")) != std::string::npos;) name.replace(at, 2, "/");
      std::set<std::string> seen;
      forEachGguf(repo / "snapshots", 3, [&](const fs::path& file) {
        const fs::path inSnapshot = file.lexically_relative(repo / "snapshots");
        const fs::path rel = inSnapshot.lexically_relative(*inSnapshot.begin());
        if (!seen.insert(rel.generic_string()).second) return;
        out.push_back(entryOf("hugging face", "hf:" + name + "/" + rel.generic_string(),
                              name + "/" + (rel.parent_path() / rel.stem()).generic_string(),
                              file));
      });
    }
  }
}

}  // namespace

std::vector<CachedModel> findGgufModels() {
  std::vector<CachedModel> out;
  addOllama(out);
  addLmStudio(out);
  addLlamaCpp(out);
  addHuggingFace(out);
  std::stable_sort(out.begin(), out.end(),
                   [](const CachedModel& a, const CachedModel& b) { return a.name < b.name; });
  return out;
}

std::optional<std::string> resolveGgufModel(const std::string& name) {
  // Only names of the stores' forms: any other name is not worth scanning them for.
  static const std::regex form("^(ollama|lmstudio|lm studio|llama\\.cpp|hf|hugging face):.+");
  if (!std::regex_match(name, form)) return std::nullopt;
  std::string wanted = name;
  // ollama run's default tag.
  if (name.rfind("ollama:", 0) == 0 && name.find(':', 7) == std::string::npos &&
      name.find(' ') == std::string::npos)
    wanted += ":latest";
  for (const CachedModel& m : findGgufModels()) {
    if (!m.error.empty()) continue;
    // The name without its " (Q4_K_M)".
    const std::string suffix = m.fileType.empty() ? "" : " (" + m.fileType + ")";
    const std::string bare = m.name.substr(0, m.name.size() - suffix.size());
    if (m.id == wanted || m.name == name || bare == name) return m.path;
  }
  return std::nullopt;
}

}  // namespace attnscope
