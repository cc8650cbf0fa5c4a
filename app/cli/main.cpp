// SPDX-License-Identifier: GPL-3.0-or-later
// attnscope-cli: headless runs, exports and training. Exit codes: 0 success, 2 bad input, 1
// internal.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "arg_parser.h"
#include "attnscope/error.h"
#include "attnscope/file_io.h"
#include "attnscope/runtime.h"
#include "commands.h"

namespace attnscope::cli {

/// The message with control characters written as \xNN: a tensor name or model_type from a
/// model file may hold terminal escape sequences (ESC, or the 8-bit CSI U+009B), which must not
/// reach the terminal. Also keeps the message on one line.
std::string printable(const std::string& m) {
  std::string out;
  out.reserve(m.size());
  char hex[8];
  for (std::size_t i = 0; i < m.size(); ++i) {
    const auto c = static_cast<unsigned char>(m[i]);
    const bool c1 = c == 0xC2 && i + 1 < m.size() && static_cast<unsigned char>(m[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(m[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else if (c1) {
      std::snprintf(hex, sizeof hex, "\\u%04X", static_cast<unsigned char>(m[++i]));
      out += hex;
    } else {
      out += m[i];
    }
  }
  return out;
}

}  // namespace attnscope::cli

namespace {

const char* kUsage =
    "usage: attnscope-cli <command> [flags]\n"
    "\n"
    "commands:\n"
    "  run        run a model on text or random input; print shapes, the trace, write JSON/dumps\n"
    "  generate   write text step by step (key/value cache); each step's candidates and attention\n"
    "  tokenize   split text into tokens\n"
    "  train      train a tiny character-level GPT on a text file\n"
    "  eval       print a tiny GPT's validation loss on a text file\n"
    "  sample     generate text with a tiny GPT\n"
    "  export     render any of the ten views (heatmap, grid, compare, ...) to PNG, SVG or PDF\n"
    "  download   fetch a model from the Hugging Face Hub into the shared cache (gpt2, ...)\n"
    "  models     list the supported architectures and the cached models (--json)\n"
    "  analyze    rollout, induction / previous- / duplicate-token scores, value norms, head\n"
    "             ablation (--json)\n"
    "  batch      run many commands in one process, one JSON line each in and out: LibTorch\n"
    "             starts once (~0.7 s saved per command)\n"
    "\n"
    "'attnscope-cli <command> --help' lists a command's flags; --version names the runtime\n"
    "(LibTorch, threads, CUDA, the BLAS kernels in use).\n"
    "\n"
    "--force (any command) writes through a symbolic link whose target is outside its folder,\n"
    "or through any link when running as root; without it such outputs are refused.\n";

std::string firstLine(const char* message) {
  std::string m = message;
  if (const auto eol = m.find('\n'); eol != std::string::npos) m.resize(eol);
  return m;
}

/// Ends the process once its output is out, without running the libraries' static destructors:
/// LibTorch's deregister its thousands of operators one by one, ~70 ms of every command (a
/// whole GPT-2 run at T = 1000 takes ~3.2 s; `--help` ~0.7 s). Every file a command writes is
/// closed by then (file_io.h writes and closes before returning). Under a sanitizer the process
/// exits normally, so that the leak check at exit still runs.
int exitNow(int code) {
  if (std::fflush(nullptr) != 0 && code == 0) {
    std::perror("attnscope-cli: writing the output");
    code = 1;
  }
#if defined(__SANITIZE_ADDRESS__)  // GCC's -fsanitize=address, as the sanitize preset builds
  return code;
#else
  std::_Exit(code);
#endif
}

}  // namespace

namespace attnscope::cli {

int dispatchCommand(const std::string& name, std::vector<std::string> args) {
  const std::map<std::string, int (*)(const std::vector<std::string>&)> commands = {
      {"run", runCommand},           {"tokenize", tokenizeCommand}, {"train", trainCommand},
      {"eval", evalCommand},         {"sample", sampleCommand},     {"export", exportCommand},
      {"models", modelsCommand},     {"analyze", analyzeCommand},   {"download", downloadCommand},
      {"generate", generateCommand}, {"batch", batchCommand},
  };
  if (name == "--help" || name == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("attnscope-cli %s\n%s\n", ATTNSCOPE_VERSION, runtimeDescription().c_str());
    return 0;
  }
  const auto command = commands.find(name);
  if (command == commands.end()) {
    std::fprintf(stderr, "attnscope-cli: unknown command '%s' (see attnscope-cli --help)\n",
                 printable(name).c_str());
    return 2;
  }
  const char* n = command->first.c_str();
  try {
    // --force belongs to every command that writes: taken out here, before the command's flags.
    const auto force = std::remove(args.begin(), args.end(), std::string("--force"));
    setFollowAnyOutputLink(force != args.end());
    args.erase(force, args.end());
    return command->second(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "attnscope-cli %s: %s\n", n, printable(e.what()).c_str());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "attnscope-cli %s: %s\n", n, printable(firstLine(e.what())).c_str());
    return e.isUserError() ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "attnscope-cli %s: out of memory; use smaller sizes or --memory-limit\n",
                 n);
    return 2;
  } catch (const std::exception& e) {
    // One line: a library's message may carry a whole backtrace after it.
    std::fprintf(stderr, "attnscope-cli %s: internal error: %s\n", n,
                 printable(firstLine(e.what())).c_str());
    return 1;
  }
}

}  // namespace attnscope::cli

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must fail a write with EFBIG, reported like a full disk, not
  // kill the process half-way through a file.
  std::signal(SIGXFSZ, SIG_IGN);
  attnscope::chooseBlasKernels();
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return exitNow(2);
  }
  return exitNow(
      attnscope::cli::dispatchCommand(argv[1], std::vector<std::string>(argv + 2, argv + argc)));
}
