// SPDX-License-Identifier: GPL-3.0-or-later
#include <QCoreApplication>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "arg_parser.h"
#include "attnscope/error.h"
#include "commands.h"
#include "hub_downloader.h"
#include "transfer_rate.h"

namespace attnscope::cli {

namespace {

std::atomic<bool> g_cancelDownload{false};

void cancelDownload(int) { g_cancelDownload = true; }

/// Ctrl-C and kill stop the download between two network events: the partial file stays
/// resumable and nothing half-done is linked into the snapshot.
void catchInterrupts() {
  struct sigaction action {};
  action.sa_handler = cancelDownload;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

/// The repo id comes first; --include takes one glob or several (as `hf download --include`).
std::vector<std::string> splitArguments(const std::vector<std::string>& args, std::string& repoId) {
  std::vector<std::string> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--include") {
      std::size_t j = i + 1;
      for (; j < args.size() && args[j].rfind("--", 0) != 0; ++j)
        flags.insert(flags.end(), {a, args[j]});
      if (j == i + 1) flags.push_back(a);  // the parser reports the missing value
      i = j - 1;
    } else if (a == "--revision" && i + 1 < args.size()) {
      flags.insert(flags.end(), {a, args[++i]});
    } else if (a.rfind("-", 0) == 0 || !repoId.empty()) {
      flags.push_back(a);
    } else {
      repoId = a;
    }
  }
  return flags;
}

/// Progress on stderr: one line redrawn in place on a terminal; otherwise (a log, a pipe) a line
/// per file and at most one a second.
class ProgressLine {
 public:
  ProgressLine() : m_terminal(::isatty(STDERR_FILENO) == 1) {}

  void show(const hub::DownloadProgress& p) {
    if (!p.note.empty()) {
      finishLine();
      std::fprintf(stderr, "%s\n", printable(p.note).c_str());
      return;
    }
    if (p.total == 0) return;
    const std::string text =
        "[" + std::to_string(p.fileIndex) + "/" + std::to_string(p.fileCount) + "] " + p.file +
        ": " + hub::TransferRate::describe(p.done, p.total, p.bytesPerSecond, p.secondsLeft);
    const auto now = std::chrono::steady_clock::now();
    if (m_terminal) {
      std::fprintf(stderr, "\r%s\x1b[K", printable(text).c_str());
      m_open = true;
    } else if (p.file != m_file || now - m_last >= std::chrono::seconds(1)) {
      std::fprintf(stderr, "%s\n", printable(text).c_str());
      m_last = now;
    }
    m_file = p.file;
    std::fflush(stderr);
  }
  void finishLine() {
    if (m_open) std::fputc('\n', stderr);
    m_open = false;
  }

 private:
  bool m_terminal;
  bool m_open = false;
  std::string m_file;
  std::chrono::steady_clock::time_point m_last{};
};

}  // namespace

int downloadCommand(const std::vector<std::string>& args) {
  ArgParser p("attnscope-cli download",
              "attnscope-cli download REPO_ID [--revision REV] [--include GLOB...]\n"
              "Download a model from the Hugging Face Hub (gpt2, HuggingFaceTB/SmolLM2-135M, ...) "
              "into the hub cache the Python tools share ($HF_HUB_CACHE, else $HF_HOME/hub, else "
              "~/.cache/huggingface/hub), fetching only what attnscope needs: config.json, the "
              "tokenizer files and the weights in the best form present. Resumes a partial "
              "download; HF_TOKEN for gated models, HF_ENDPOINT for a mirror, HF_HUB_OFFLINE=1 "
              "for no network.");
  p.option("--revision", "REV", "branch, tag or commit hash (default: main)");
  p.option("--include", "GLOB",
           "also fetch the files matching GLOB (fnmatch; several may follow one --include); in a "
           "GGUF repository, the .gguf file to fetch",
           /*repeatable=*/true);
  std::string repoId;
  p.parse(splitArguments(args, repoId));
  if (p.helpRequested()) {
    std::cout << p.help();
    return 0;
  }
  if (repoId.empty())
    throw UsageError("which model? attnscope-cli download REPO_ID (for example gpt2)");
  hub::DownloadRequest request;
  request.repoId = repoId;
  request.revision = p.value("--revision", "main");
  request.includes = p.values("--include");

  // Qt Network needs an application object; no display is involved.
  static int argc = 1;
  static char name[] = "attnscope-cli";
  static char* argv[] = {name, nullptr};
  QCoreApplication app(argc, argv);
  catchInterrupts();
  ProgressLine line;
  hub::DownloadResult result;
  try {
    result = hub::HubDownloader().download(
        request, [&](const hub::DownloadProgress& progress) { line.show(progress); },
        &g_cancelDownload);
  } catch (const Error& e) {
    line.finishLine();
    if (e.kind() == ErrorKind::Cancelled)
      throw Error(ErrorKind::Cancelled,
                  "download cancelled; the files already complete stay in the cache and the "
                  "same command resumes the rest");
    throw;
  }
  line.finishLine();
  if (result.offline) {
    std::printf("%s is in the cache (HF_HUB_OFFLINE is set: nothing was fetched)\n",
                repoId.c_str());
  } else {
    std::printf("downloaded %s (revision %s, commit %s): %zu files, %s (%s fetched)\n",
                repoId.c_str(), printable(request.revision).c_str(), result.commit.c_str(),
                result.files.size(), hub::TransferRate::formatBytes(result.totalBytes).c_str(),
                hub::TransferRate::formatBytes(result.fetchedBytes).c_str());
  }
  std::printf("path: %s\n",
              printable(result.gguf ? result.modelSource : result.snapshotDir).c_str());
  const std::string model = result.modelSource.find(' ') == std::string::npos
                                ? result.modelSource
                                : "'" + result.modelSource + "'";
  std::printf("run: attnscope-cli run --model %s --text \"Hello, world\"\n",
              printable(model).c_str());
  return 0;
}

}  // namespace attnscope::cli
