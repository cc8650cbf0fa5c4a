// SPDX-License-Identifier: GPL-3.0-or-later
// `attnscope-cli batch`: many commands in one process. Every process that links LibTorch spends
// ~0.7 s before main loading its ~300 shared libraries and registering its operators; a script
// that tokenizes, runs or exports a thousand sentences pays that once here instead of a thousand
// times.
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "arg_parser.h"
#include "attnscope/error.h"
#include "attnscope/runtime.h"
#include "commands.h"

namespace attnscope::cli {
namespace {

const char* kBatchHelp =
    "usage: attnscope-cli batch [FILE]\n"
    "\n"
    "Runs many commands in one process: LibTorch starts once instead of once per command.\n"
    "Reads FILE (or standard input, also with FILE '-') one line at a time. Each line is a JSON\n"
    "array of the words that would follow attnscope-cli on a command line, for example\n"
    "  [\"tokenize\", \"--model\", \"gpt2\", \"--text\", \"Hello, world\"]\n"
    "  [\"run\", \"--model\", \"gpt2\", \"--text\", \"Hello, world\", \"--json\", \"out.json\"]\n"
    "Empty lines and lines starting with # are skipped. Each command is answered, as soon as it\n"
    "has finished, by one line of JSON on standard output:\n"
    "  {\"line\": N, \"rc\": EXIT_CODE, \"stdout\": \"...\", \"stderr\": \"...\"}\n"
    "with the exit code and the output the command would have had on its own (bytes that are\n"
    "not UTF-8 become U+FFFD: write byte-exact output to a file with the command's own flags).\n"
    "Commands read nothing from standard input here. A line that is not an array of strings\n"
    "is answered with exit code 2 and the batch goes on.\n"
    "\n"
    "Exit code: 0 when every command succeeded, otherwise that of the first that failed.\n";

struct Answer {
  int rc = 0;
  std::string out, err;
};

std::string readBack(std::FILE* f) {
  const int fd = fileno(f);
  const off_t size = lseek(fd, 0, SEEK_END);
  std::string s(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  lseek(fd, 0, SEEK_SET);
  std::size_t got = 0;
  while (got < s.size()) {
    const ssize_t n = read(fd, s.data() + got, s.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  s.resize(got);
  return s;
}

/// Runs one command with its output captured at the file descriptors, not the streams: the
/// commands write through both stdio and iostreams, and libraries (Qt, LibTorch's warnings)
/// write to descriptor 2 directly. Standard input is /dev/null meanwhile, so that no command
/// reads the batch's next lines.
Answer runCaptured(const std::vector<std::string>& words) {
  std::cout.flush();
  std::fflush(nullptr);
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  const int devNull = open("/dev/null", O_RDONLY);
  if (!out || !err || devNull < 0) {
    if (out) std::fclose(out);
    if (err) std::fclose(err);
    if (devNull >= 0) close(devNull);
    throw Error(ErrorKind::Io, "batch: cannot create temporary files for a command's output");
  }
  const int savedIn = dup(0), savedOut = dup(1), savedErr = dup(2);
  dup2(devNull, 0);
  dup2(fileno(out), 1);
  dup2(fileno(err), 2);
  struct sigaction interrupt {};
  sigaction(SIGINT, nullptr, &interrupt);  // a command (download) may take Ctrl-C for itself

  Answer a;
  a.rc = dispatchCommand(words.front(), std::vector<std::string>(words.begin() + 1, words.end()));

  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  sigaction(SIGINT, &interrupt, nullptr);
  dup2(savedIn, 0);
  dup2(savedOut, 1);
  dup2(savedErr, 2);
  for (const int fd : {savedIn, savedOut, savedErr, devNull}) close(fd);
  a.out = readBack(out);
  a.err = readBack(err);
  std::fclose(out);
  std::fclose(err);
  return a;
}

/// The words of one line, or the reason it has none.
bool wordsOf(const std::string& line, std::vector<std::string>& words, std::string& why) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    why = "not JSON";
  } else if (!j.is_array() || j.empty()) {
    why = "not a non-empty JSON array";
  } else {
    for (const auto& w : j) {
      if (!w.is_string()) {
        why = "an element is not a string";
        return false;
      }
      words.push_back(w.get<std::string>());
    }
    if (words.front() == "batch") why = "a batch cannot run another batch";
    return why.empty();
  }
  return false;
}

void answer(int line, const Answer& a) {
  const nlohmann::json j = {{"line", line}, {"rc", a.rc}, {"stdout", a.out}, {"stderr", a.err}};
  const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);  // a program driving the batch waits for each answer
}

}  // namespace

int batchCommand(const std::vector<std::string>& args) {
  std::string path = "-";
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kBatchHelp, stdout);
      return 0;
    }
    if (a.size() > 1 && a[0] == '-') throw UsageError("unknown flag " + a);
    if (path != "-") throw UsageError("give one FILE (or - for standard input), not several");
    path = a;
  }
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw Error(ErrorKind::Io, "cannot read " + path);
  }
  std::istream& in = path == "-" ? std::cin : file;

  // The thread count a fresh process would start with, restored after every command: one
  // command's --threads must not carry over to the next.
  (void)runtimeDescription();
  const int threads = threadCount();
  const bool followLoad = threadCountFollowsLoad();

  int first = 0, number = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    std::vector<std::string> words;
    std::string why;
    Answer a;
    if (wordsOf(line, words, why)) {
      a = runCaptured(words);
    } else {
      a.rc = 2;
      a.err = "attnscope-cli batch: line " + std::to_string(number) + ": " + why +
              "; each line is a JSON array of words, such as [\"tokenize\", \"--text\", \"hi\"]\n";
    }
    if (threadCount() != threads || threadCountFollowsLoad() != followLoad)
      setThreadCount(followLoad ? 0 : threads);
    answer(number, a);
    if (first == 0) first = a.rc;
  }
  return first;
}

}  // namespace attnscope::cli
