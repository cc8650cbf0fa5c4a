// SPDX-License-Identifier: GPL-3.0-or-later
// findGgufModels / resolveGgufModel: GGUF models in fake Ollama, LM Studio, llama.cpp and Hugging
// Face stores under a temporary HOME are listed by readable names from their headers, a broken
// file is listed with its error, split parts after the first are not listed, and the names open
// through openModel (what --model uses).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "attnscope/model.h"
#include "attnscope/model_catalog.h"
#include "attnscope/model_spec.h"
#include "python_check.h"
#include "temp_dir.h"
#include "tiny_gguf.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (m_old)
      ::setenv(m_name, m_old->c_str(), 1);
    else
      ::unsetenv(m_name);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string ollamaManifest(const std::string& digest) {
  return R"({"schemaVersion":2,"layers":[)"
         R"({"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" +
         std::string(64, 'b') +
         R"("},{"mediaType":"application/vnd.ollama.image.model","digest":")" + digest + R"("}]})";
}

TEST(GgufStores, ListsEveryStoreByReadableNamesAndOpensThem) {
  ATTNSCOPE_SKIP_WITHOUT_PYTHON_MODULE("numpy");
  test::TempDir dir;
  const fs::path home = dir.path("home");
  ScopedEnv h("HOME", home.string()), o("OLLAMA_MODELS", std::nullopt),
      l("LLAMA_CACHE", std::nullopt), c("HF_HUB_CACHE", std::nullopt), f("HF_HOME", std::nullopt);

  // Ollama: a real (tiny) Llama blob under two tags, and a manifest whose digest is not one.
  const std::string script = std::string(ATTNSCOPE_TEST_DATA) + "/../reference/gguf_reference.py";
  const std::string py = std::string(test::kPython) + " " + script;
  ASSERT_EQ(std::system((py + " tiny_llama " + dir.path("hf")).c_str()), 0);
  ASSERT_EQ(std::system((py + " llama " + dir.path("hf") + " " + dir.path("") + " Q8_0").c_str()),
            0);
  const fs::path ollama = home / ".ollama" / "models";
  const std::string hex(64, 'a');
  fs::create_directories(ollama / "blobs");
  fs::copy_file(dir.path("llama_Q8_0.gguf"), ollama / "blobs" / ("sha256-" + hex));
  const fs::path library = ollama / "manifests" / "registry.ollama.ai" / "library";
  write(library / "tiny" / "1b", ollamaManifest("sha256:" + hex));
  write(library / "tiny" / "latest", ollamaManifest("sha256:" + hex));
  write(ollama / "manifests" / "registry.ollama.ai" / "someone" / "evil" / "latest",
        ollamaManifest("sha256:../../../etc/passwd"));
  // LM Studio (both folders), one file broken; llama.cpp's cache with a split model; a GGUF
  // repository in the Hugging Face cache.
  write(home / ".lmstudio" / "models" / "pub" / "repo" / "model-Q4_K_M.gguf",
        test::tinyGguf("llama", 15));
  write(home / ".cache" / "lm-studio" / "models" / "old" / "repo" / "bad.gguf", "GGUF\3\0");
  const fs::path llamaCpp = home / ".cache" / "llama.cpp";
  write(llamaCpp / "user_repo_phi-Q8_0.gguf", test::tinyGguf("phi2", 7));
  write(llamaCpp / "big-00001-of-00002.gguf", test::tinyGguf("qwen2", 7));
  write(llamaCpp / "big-00002-of-00002.gguf", test::tinyGguf("qwen2", 7));
  write(home / ".cache" / "huggingface" / "hub" / "models--org--repo-GGUF" / "snapshots" / "abc" /
            "m-F16.gguf",
        test::tinyGguf("qwen3", 1));

  const std::vector<CachedModel> models = findGgufModels();
  std::vector<std::string> names;
  for (const CachedModel& m : models) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "hugging face: org/repo-GGUF/m-F16 (F16)",
                       "llama.cpp: big-00001-of-00002 (Q8_0)",
                       "llama.cpp: user_repo_phi-Q8_0 (Q8_0)",
                       "lm studio: old/repo/bad",
                       "lm studio: pub/repo/model-Q4_K_M (Q4_K_M)",
                       "ollama: someone/evil:latest",
                       "ollama: tiny:1b (Q8_0-like)",
                       "ollama: tiny:latest (Q8_0-like)",
                   }));
  ASSERT_EQ(models.size(), 8u);
  EXPECT_EQ(models[0].id, "hf:org/repo-GGUF/m-F16.gguf");
  EXPECT_EQ(models[0].modelType, "qwen3");
  EXPECT_TRUE(models[0].supported);
  EXPECT_FALSE(models[2].supported);      // phi2: no family maps it yet
  EXPECT_FALSE(models[3].error.empty());  // truncated: the reader's refusal, listed
  EXPECT_EQ(models[4].id, "lmstudio:pub/repo/model-Q4_K_M.gguf");
  EXPECT_EQ(models[5].error, "its manifest names no model blob");
  EXPECT_EQ(models[6].id, "ollama:tiny:1b");
  EXPECT_EQ(models[6].path, (ollama / "blobs" / ("sha256-" + hex)).string());
  EXPECT_EQ(models[6].modelType, "llama");
  EXPECT_TRUE(models[6].supported);

  // By id, by name with or without the type, an Ollama name without a tag as :latest.
  for (const std::string name :
       {"ollama:tiny:1b", "ollama:tiny", "ollama: tiny:1b (Q8_0-like)", "ollama: tiny:1b"})
    EXPECT_EQ(resolveGgufModel(name), models[6].path) << name;
  EXPECT_EQ(resolveGgufModel("lmstudio:pub/repo/model-Q4_K_M.gguf"), models[4].path);
  EXPECT_FALSE(resolveGgufModel("ollama:tiny:7b"));
  EXPECT_FALSE(resolveGgufModel("lm studio: old/repo/bad"));  // listed with its error only
  EXPECT_FALSE(resolveGgufModel("tiny"));

  ModelSpec spec;
  spec.source = "ollama:tiny";
  const std::shared_ptr<Model> model = openModel(spec);
  EXPECT_EQ(model->info().name, "ollama:tiny");
  EXPECT_EQ(model->info().layers, 1);
  RunRequest r;
  r.texts = {"the cat"};
  EXPECT_EQ(model->run(r).group().layers(), 1);
}

}  // namespace
}  // namespace attnscope
