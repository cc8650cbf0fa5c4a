// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace attnscope::cli {

/// Each subcommand takes the arguments after its name and returns the process exit code.
/// They throw UsageError / attnscope::Error; main maps those to exit codes.
int runCommand(const std::vector<std::string>& args);
/// Step-by-step generation with a key/value cache: the text as it is written, --json, --dump.
int generateCommand(const std::vector<std::string>& args);
int tokenizeCommand(const std::vector<std::string>& args);
int trainCommand(const std::vector<std::string>& args);
int evalCommand(const std::vector<std::string>& args);
int sampleCommand(const std::vector<std::string>& args);
int modelsCommand(const std::vector<std::string>& args);
/// Rollout, induction scores or value-weighted norms of one run, as JSON.
int analyzeCommand(const std::vector<std::string>& args);
/// Needs Qt (offscreen when there is no display); the others run without it.
int exportCommand(const std::vector<std::string>& args);
/// Downloads a model from the Hugging Face Hub into the shared cache (Qt Network).
int downloadCommand(const std::vector<std::string>& args);

/// Many commands in one process: each input line a JSON array of arguments, each answered by a
/// JSON line {"rc", "stdout", "stderr"}.
int batchCommand(const std::vector<std::string>& args);

/// Runs one command (the words after the program name) as main would, errors mapped to exit
/// codes and printed on stderr: 0 success, 2 bad input, 1 internal.
int dispatchCommand(const std::string& name, std::vector<std::string> args);

/// `text` with control characters written as \xNN (and the 8-bit CSI as \u009B), on one line:
/// for anything from a model file that reaches the terminal (errors, notices, names).
std::string printable(const std::string& text);

}  // namespace attnscope::cli
