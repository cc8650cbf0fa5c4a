// SPDX-License-Identifier: GPL-3.0-or-later
#include "atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "attnscope/error.h"

namespace attnscope {

void writeFileAtomically(const std::string& path, const std::string& bytes) {
  std::random_device rd;
  const std::string tmp = path + ".tmp-" + std::to_string(rd() % 1000000);
  const auto fail = [&](int err) {
    std::remove(tmp.c_str());
    throw Error(ErrorKind::Io, "cannot write " + path + ": " + std::strerror(err));
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail(errno);
  const std::size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int writeErr = errno;
  if (written != bytes.size()) {
    std::fclose(f);
    fail(writeErr ? writeErr : EIO);
  }
  if (std::fclose(f) != 0) fail(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace attnscope
