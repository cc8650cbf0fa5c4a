// SPDX-License-Identifier: GPL-3.0-or-later
// The pieces of the Hub download that need no network: names that may become cache paths, the
// cache's folder names, which files a repository's list yields, the environment's settings, and
// the progress text. The transfers themselves are tested against the stand-in
// (tests/cli/download_test.py, tests/app/download_dialog_test.cpp).
#include <QTest>

#include <chrono>

#include "attnscope/error.h"
#include "file_selection.h"
#include "hub_cache.h"
#include "hub_names.h"
#include "hub_settings.h"
#include "transfer_rate.h"

using namespace attnscope;
using namespace attnscope::hub;

namespace {

/// The message of the Error `f` throws; "" when it throws none.
template <typename F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class HubUnitsTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void repoIdsThatMayBecomePaths() {
    for (const char* good : {"gpt2", "bert-base-uncased", "HuggingFaceTB/SmolLM2-135M",
                             "Qwen/Qwen2.5-0.5B", "google/gemma-3-1b-it", "a.b_c/d.e"})
      QVERIFY2(errorOf([&] { checkRepoId(good); }).empty(), good);
    for (const char* bad : {"", "../etc", "org/../x", "a/b/c", "/gpt2", "gpt2/", "a--b", "org/-x",
                            ".hidden", "org/na me", "org\\name", "org/x..y"})
      QVERIFY2(errorOf([&] { checkRepoId(bad); }).find("not a Hugging Face model id") !=
                       std::string::npos ||
                   std::string(bad).empty(),
               bad);
    QVERIFY(errorOf([] { checkRevision("refs/pr/1"); }).empty());
    QVERIFY(!errorOf([] { checkRevision("../main"); }).empty());
    QVERIFY(!errorOf([] { checkRevision("a//b"); }).empty());
    QVERIFY(isSafeRepoFile("onnx/model.onnx"));
    for (const char* bad : {"../x", "/etc/passwd", "a//b", "a/./b", "a/..", "a\\b", "x\n", ""})
      QVERIFY2(!isSafeRepoFile(bad), bad);
    QVERIFY(isCommitHash("0123456789abcdef0123456789abcdef01234567"));
    QVERIFY(!isCommitHash("0123456789ABCDEF0123456789abcdef01234567"));
    QVERIFY(isSafeEtag("a9f0e61a137d86aa6e75bd9fd9b7e0a4e4bd1cd5"));
    QVERIFY(!isSafeEtag("..") && !isSafeEtag("a/b") && !isSafeEtag(""));
  }

  void cacheLayout() {
    QCOMPARE(HubCache::repoFolderName("gpt2"), std::string("models--gpt2"));
    QCOMPARE(HubCache::repoFolderName("openai-community/gpt2"),
             std::string("models--openai-community--gpt2"));
    const HubCache cache("/c", "org/m");
    QCOMPARE(cache.blobPath("e").string(), std::string("/c/models--org--m/blobs/e"));
    QCOMPARE(cache.incompletePath("e").string(),
             std::string("/c/models--org--m/blobs/e.incomplete"));
    QCOMPARE(cache.lockPath("e").string(), std::string("/c/.locks/models--org--m/e.lock"));
    QCOMPARE(cache.pointerPath("abc", "onnx/m.onnx").string(),
             std::string("/c/models--org--m/snapshots/abc/onnx/m.onnx"));
  }

  void filesAttnscopeNeeds() {
    const std::vector<std::string> repo = {
        "README.md",   "config.json",     "generation_config.json", "merges.txt",
        "vocab.json",  "tokenizer.json",  "model.safetensors",      "pytorch_model.bin",
        "tf_model.h5", "onnx/model.onnx", "flax_model.msgpack"};
    FileSelection s = FileSelection::choose("org/m", repo, {});
    QCOMPARE(s.files,
             (std::vector<std::string>{"config.json", "generation_config.json", "tokenizer.json",
                                       "vocab.json", "merges.txt", "model.safetensors"}));
    QVERIFY(s.index.empty() && s.gguf.empty());
    // .bin only when there is no safetensors; --include adds, folders by a trailing '/'.
    s = FileSelection::choose("org/m", {"config.json", "pytorch_model.bin", "onnx/a", "onnx/b"},
                              {"onnx/"});
    QCOMPARE(s.files,
             (std::vector<std::string>{"config.json", "pytorch_model.bin", "onnx/a", "onnx/b"}));
    // Sharded: the index first, then the shards it names (not every .safetensors there).
    const std::vector<std::string> sharded = {
        "config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors", "consolidated.safetensors"};
    s = FileSelection::choose("org/m", sharded, {});
    QCOMPARE(s.index, std::string("model.safetensors.index.json"));
    s.addShards(R"({"weight_map": {"a": "model-00002-of-00002.safetensors",
                                   "b": "model-00001-of-00002.safetensors",
                                   "c": "model-00002-of-00002.safetensors"}})",
                sharded);
    QCOMPARE(s.files, (std::vector<std::string>{"config.json", "model.safetensors.index.json",
                                                "model-00001-of-00002.safetensors",
                                                "model-00002-of-00002.safetensors"}));
    QVERIFY(errorOf([&] {
              s.addShards(R"({"weight_map": {"a": "../../x"}})", sharded);
            }).find("does not have") != std::string::npos);
    // GGUF: the one file, or the one --include names; several without a choice are refused.
    QCOMPARE(FileSelection::choose("org/g", {"README.md", "m-Q4_K_M.gguf"}, {}).gguf,
             std::string("m-Q4_K_M.gguf"));
    const std::vector<std::string> ggufs = {"m-Q4_K_M.gguf", "m-Q8_0.gguf"};
    QCOMPARE(FileSelection::choose("org/g", ggufs, {"*Q8_0.gguf"}).files,
             std::vector<std::string>{"m-Q8_0.gguf"});
    QVERIFY(errorOf([&] {
              FileSelection::choose("org/g", ggufs, {});
            }).find("holds 2 GGUF files; choose one with --include") != std::string::npos);
    QVERIFY(errorOf([&] {
              FileSelection::choose("org/m", {"config.json", "tf_model.h5"}, {});
            }).find("has no weights attnscope opens") != std::string::npos);
    QVERIFY(errorOf([&] {
              FileSelection::choose("org/m", repo, {"*.nothing"});
            }).find("no file of org/m matches --include '*.nothing'") != std::string::npos);
    QVERIFY(matchesGlob("*.json", "sub/x.json"));  // as Python's fnmatch: '*' crosses '/'
  }

  void settingsFromTheEnvironment() {
    qputenv("HF_ENDPOINT", "http://127.0.0.1:1234//");
    qputenv("HF_HUB_OFFLINE", "yes");
    qputenv("HF_TOKEN", "  hf_abc  ");
    qputenv("HF_HUB_CACHE", "/tmp/hub-units");
    HubSettings s = HubSettings::fromEnvironment();
    QCOMPARE(s.endpoint, std::string("http://127.0.0.1:1234"));
    QVERIFY(s.offline);
    QCOMPARE(s.token, std::string("hf_abc"));
    QCOMPARE(s.cacheDir, std::string("/tmp/hub-units"));
    qputenv("HF_HUB_OFFLINE", "0");
    QVERIFY(!HubSettings::fromEnvironment().offline);
    qputenv("HF_TOKEN", "hf_secret\nX-Evil: 1");
    const std::string e = errorOf([] { HubSettings::fromEnvironment(); });
    QVERIFY2(e.find("line break") != std::string::npos && e.find("secret") == std::string::npos,
             e.c_str());
    qputenv("HF_TOKEN", "x");
    qputenv("HF_ENDPOINT", "ftp://mirror");
    QVERIFY(errorOf([] { HubSettings::fromEnvironment(); }).find("HF_ENDPOINT") !=
            std::string::npos);
    for (const char* name : {"HF_ENDPOINT", "HF_HUB_OFFLINE", "HF_TOKEN", "HF_HUB_CACHE"})
      qunsetenv(name);
  }

  // Where huggingface_hub itself would write, so that neither side downloads twice.
  void cacheFolderAsHuggingFaceHubChoosesIt() {
    const QByteArray home = qgetenv("HOME");
    qputenv("HOME", "/home/u");
    qputenv("XDG_CACHE_HOME", "/xdg");
    QCOMPARE(HubSettings::fromEnvironment().cacheDir, std::string("/xdg/huggingface/hub"));
    qputenv("HF_HOME", "/hf");
    QCOMPARE(HubSettings::fromEnvironment().cacheDir, std::string("/hf/hub"));
    qputenv("HUGGINGFACE_HUB_CACHE", "/legacy");
    QCOMPARE(HubSettings::fromEnvironment().cacheDir, std::string("/legacy"));
    qputenv("HF_HUB_CACHE", "/new");
    QCOMPARE(HubSettings::fromEnvironment().cacheDir, std::string("/new"));
    for (const char* name : {"XDG_CACHE_HOME", "HF_HOME", "HUGGINGFACE_HUB_CACHE", "HF_HUB_CACHE"})
      qunsetenv(name);
    QCOMPARE(HubSettings::fromEnvironment().cacheDir,
             std::string("/home/u/.cache/huggingface/hub"));
    qputenv("HOME", home);
  }

  void progressText() {
    QCOMPARE(TransferRate::formatBytes(0), std::string("0 B"));
    QCOMPARE(TransferRate::formatBytes(999), std::string("999 B"));
    QCOMPARE(TransferRate::formatBytes(1000), std::string("1.0 kB"));
    QCOMPARE(TransferRate::formatBytes(548'105'171), std::string("548 MB"));
    QCOMPARE(TransferRate::formatBytes(12'345'678), std::string("12.3 MB"));
    QCOMPARE(TransferRate::formatDuration(112), std::string("1 min 52 s"));
    QCOMPARE(TransferRate::formatDuration(-1), std::string());
    TransferRate rate;
    const auto t0 = TransferRate::Clock::time_point{};
    rate.add(0, t0);
    QCOMPARE(rate.bytesPerSecond(), 0.0);  // one sample: no speed yet
    rate.add(2'000'000, t0 + std::chrono::seconds(2));
    QCOMPARE(rate.bytesPerSecond(), 1e6);
    QCOMPARE(rate.secondsLeft(3'000'000), 3.0);
    // Older samples leave the window: the speed is the recent one.
    rate.add(2'000'000, t0 + std::chrono::seconds(20));
    rate.add(2'100'000, t0 + std::chrono::seconds(21));
    QVERIFY(rate.bytesPerSecond() < 1e5);
    QCOMPARE(TransferRate::describe(12'300'000, 523'400'000, 4.5e6, 112),
             std::string("12.3 MB of 523 MB, 4.5 MB/s, 1 min 52 s left"));
  }
};

QTEST_MAIN(HubUnitsTest)
#include "hub_units_test.moc"
