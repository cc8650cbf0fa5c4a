// SPDX-License-Identifier: GPL-3.0-or-later
#include "file_reader.h"

#include "attnscope/error.h"
#include "attnscope/file_io.h"
#include "attnscope/utf8.h"

namespace attnscope::cli {

std::string readTextFile(const std::string& path, const std::string& flag, uint64_t maxBytes) {
  std::string text;
  try {
    // stat before open: a FIFO or a device is refused instead of blocking or reading forever.
    text = readFile(path, maxBytes);
  } catch (const Error& e) {
    throw Error(e.kind(), flag + ": " + e.what());
  }
  requireValidUtf8(text, path);
  return text;
}

void checkOutputPath(const std::string& path, const std::string& flag) {
  try {
    checkWritable(path);
  } catch (const Error& e) {
    throw Error(e.kind(), flag + ": " + e.what());
  }
}

}  // namespace attnscope::cli
