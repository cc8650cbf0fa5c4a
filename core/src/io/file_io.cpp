// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "attnscope/error.h"

namespace attnscope {

std::string fileErrorMessage(const char* verb, const std::string& path, int errnoValue) {
  // std::generic_category().message is thread-safe, unlike std::strerror.
  return std::string("cannot ") + verb + " " + path + ": " +
         std::generic_category().message(errnoValue);
}

namespace {

namespace fs = std::filesystem;

constexpr const char* kTempMarker = ".tmp-";

[[noreturn]] void throwWriteError(const std::string& path, int errnoValue) {
  throw Error(ErrorKind::Io, fileErrorMessage("write", path, errnoValue));
}

[[noreturn]] void throwWriteError(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::Io, "cannot write " + path + ": " + reason);
}

// What a non-regular file is, for messages a person can act on.
const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string parentOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// What temporaryName puts after the prefix at most: "<pid>-<counter>-<6 hex digits>".
constexpr std::size_t kMaxTempSuffix = 40;

// "<name>.tmp-", where <name> is the file name of `path`, cut so that a temporary's whole name
// stays within NAME_MAX (a 250-character output name failed with "File name too long").
std::string temporaryPrefix(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  const std::size_t room = NAME_MAX - kMaxTempSuffix - std::char_traits<char>::length(kTempMarker);
  if (name.size() > room) name.resize(room);
  return name + kTempMarker;
}

// "<path>.tmp-<pid>-<n>-<ticks>" (the name cut as temporaryPrefix says): the pid lets a later
// writer tell a dead process's leftover from a live writer's file.
std::string temporaryName(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const auto ticks =
      static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "%ld-%u-%llx", static_cast<long>(::getpid()),
                counter.fetch_add(1), ticks & 0xffffffULL);
  return (fs::path(parentOf(path)) / temporaryPrefix(path)).string() + suffix;
}

// Whether `name` is one of `ownNames` or a temporary of one: the files a dump writes.
bool isOwnName(const std::string& name, const std::vector<std::string>& ownNames) {
  for (const std::string& n : ownNames) {
    if (name == n || name.rfind(temporaryPrefix(n), 0) == 0) return true;
  }
  return false;
}

// The first entry of `dir` that is not a regular file named in ownNames (a user's file, a
// folder, a link), or "" when there is none. A folder named "trace.json" is not a dump's file.
std::string firstForeignEntry(const std::string& dir, const std::vector<std::string>& ownNames,
                              std::error_code& ec) {
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code typeError;
    if (!isOwnName(name, ownNames) || !e.is_regular_file(typeError) || e.is_symlink(typeError))
      return name;
  }
  return {};
}

// Removes "<path>.tmp-<pid>-…" left by processes that no longer exist (a kill -9 mid-write), so
// repeated crashes cannot fill the disk. Files of live processes, ours included, are left alone,
// and so is anything a writer of `path` would not have made: a folder, unless `folderNames` is
// given and it holds only those files (a killed dump's folder), or a device or FIFO.
void removeStaleTemporaries(const std::string& path,
                            const std::vector<std::string>* folderNames = nullptr) {
  const std::string prefix = temporaryPrefix(path);
  const std::string dir = parentOf(path);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || pid > INT_MAX || *end != '-' || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string full = (fs::path(dir) / name).string();
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0) continue;
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
      ::unlink(full.c_str());
    } else if (S_ISDIR(st.st_mode) && folderNames) {
      std::error_code ec;
      if (firstForeignEntry(full, *folderNames, ec).empty() && !ec) fs::remove_all(full, ec);
    }
  }
  ::closedir(d);
}

// The file a write to `path` really replaces: symlinks followed, also a dangling one (whose
// target is created).
std::string resolveTarget(const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    std::string link(static_cast<std::size_t>(PATH_MAX), '\0');
    const ssize_t n = ::readlink(current.c_str(), link.data(), link.size());
    if (n < 0) return current;
    link.resize(static_cast<std::size_t>(n));
    current = fs::path(link).is_absolute() ? link : (fs::path(parentOf(current)) / link).string();
  }
  throwWriteError(path, ELOOP);
}

std::atomic<bool>& followAnyLink() {
  static std::atomic<bool> follow{false};
  return follow;
}

// Refuses writing through a symbolic link whose target the user could not have named directly:
// one outside the link's folder, or any as root (a planted link to /etc/passwd). Pipes, sockets
// and character devices behind a link (/dev/stdout -> /proc/self/fd/1) are written in place,
// never replaced, so they pass.
void checkOutputLink(const std::string& path) {
  struct stat link {};
  if (followAnyLink() || ::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 &&
      (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode)))
    return;
  const std::string target = resolveTarget(path);
  const auto folder = [](const std::string& p) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(fs::path(parentOf(p)), ec);
    return ec ? fs::path(parentOf(p)) : canonical;
  };
  std::string why;
  if (::geteuid() == 0)
    why = "running as root, attnscope does not write through symbolic links";
  else if (folder(target) != folder(path))
    why = "its target is outside the link's folder";
  if (why.empty()) return;
  throwWriteError(path, "it is a symbolic link to " + target + ", and " + why +
                            " (attnscope-cli --force writes through it)");
}

void syncFolder(const std::string& dir) {
  // Makes the rename itself durable; best effort, since some filesystems refuse fsync on folders.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

[[noreturn]] void throwReadError(const std::string& path, int errnoValue) {
  throw Error(ErrorKind::Io, fileErrorMessage("read", path, errnoValue));
}

void checkReadable(const std::string& path, const struct stat& st, uint64_t maxBytes) {
  if (S_ISDIR(st.st_mode)) throwReadError(path, EISDIR);
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorKind::Io,
                "cannot read " + path + ": it is " + kindOf(st.st_mode) + ", not a regular file");
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    throw Error(ErrorKind::ResourceLimit,
                "cannot read " + path + ": it is " + std::to_string(st.st_size) +
                    " bytes, more than the limit of " + std::to_string(maxBytes) + " bytes");
  }
}

// Opens a device or FIFO for writing without blocking: a plain open of a FIFO waits for a reader
// for ever. A reader that is still starting (`cat fifo &` just before) gets a second to open its
// end; after that the FIFO is refused. The descriptor is made blocking again for the writes.
int openDirect(const std::string& path, bool fifo) {
  constexpr int kTries = 50;  // 20 ms apart
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (errno != ENXIO || !fifo) throwWriteError(path, errno);
    if (attempt + 1 >= kTries)
      throwWriteError(path, "it is a FIFO (named pipe) with no reader; start the reader first");
    ::usleep(20000);
  }
}

}  // namespace

OutputFile::OutputFile(const std::string& path) : m_path(path) {
  if (path.empty()) throwWriteError(path, ENOENT);
  checkOutputLink(path);
  struct stat st {};
  mode_t keepMode = 0;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throwWriteError(path, "it is a folder; give a file name");
    if (!S_ISREG(st.st_mode)) {
      // A device or pipe: renaming over it would replace it (as root, /dev/null itself).
      m_fd = openDirect(path, S_ISFIFO(st.st_mode));
      m_direct = true;
      return;
    }
    keepMode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    throwWriteError(path, errno);
  }
  m_target = resolveTarget(path);
  removeStaleTemporaries(m_target);
  for (int attempt = 0; attempt < 100 && m_fd < 0; ++attempt) {
    m_temp = temporaryName(m_target);
    // O_EXCL with mode 0666 rather than mkstemp, so a new file gets the usual umask-derived
    // permissions instead of mkstemp's 0600.
    m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (m_fd < 0 && errno != EEXIST) break;
  }
  if (m_fd < 0) {
    const int err = errno;
    m_temp.clear();
    throwWriteError(path, err);
  }
  // Replacing a file keeps its permissions (a 0600 file stays private).
  if (keepMode != 0) ::fchmod(m_fd, keepMode);
}

OutputFile::~OutputFile() {
  if (m_fd >= 0) ::close(m_fd);
  if (!m_temp.empty()) ::unlink(m_temp.c_str());
}

void OutputFile::fail(int errnoValue) {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  if (!m_temp.empty()) ::unlink(m_temp.c_str());
  m_temp.clear();
  throwWriteError(m_path, errnoValue);
}

void OutputFile::write(const char* data, std::size_t size) {
  if (m_fd < 0) throwWriteError(m_path, EBADF);
  while (size > 0) {
    const ssize_t n = ::write(m_fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void OutputFile::commit() {
  if (m_fd < 0) throwWriteError(m_path, EBADF);
  if (m_direct) {
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) throwWriteError(m_path, errno);
    return;
  }
  // fsync before rename: otherwise a crash can leave the renamed file empty on some filesystems.
  if (::fsync(m_fd) != 0) fail(errno);
  const int fd = m_fd;
  m_fd = -1;
  if (::close(fd) != 0) fail(errno);
  if (std::rename(m_temp.c_str(), m_target.c_str()) != 0) fail(errno);
  m_temp.clear();
  syncFolder(parentOf(m_target));
}

void setFollowAnyOutputLink(bool follow) { followAnyLink() = follow; }

void checkWritable(const std::string& path) {
  if (path.empty()) throwWriteError(path, ENOENT);
  checkOutputLink(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throwWriteError(path, "it is a folder; give a file name");
    if (!S_ISREG(st.st_mode)) {
      if (::access(path.c_str(), W_OK) != 0) throwWriteError(path, errno);
      return;
    }
  } else if (errno != ENOENT) {
    throwWriteError(path, errno);
  }
  // The temporary file is created beside the real target, so that folder must take new files.
  const std::string dir = parentOf(resolveTarget(path));
  struct stat folder {};
  if (::stat(dir.c_str(), &folder) != 0) throwWriteError(path, errno);
  if (!S_ISDIR(folder.st_mode)) throwWriteError(path, ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throwWriteError(path, errno);
}

void writeOutputFile(const std::string& path, const std::string& bytes) {
  OutputFile out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

void replaceFolderAtomically(const std::string& dir, const std::vector<std::string>& ownNames,
                             const std::function<void(const std::string& tempDir)>& fill,
                             const std::string& what) {
  const auto failTo = [&](const char* verb, const std::string& reason) {
    throw Error(ErrorKind::Io,
                std::string("cannot ") + verb + " " + what + " " + dir + ": " + reason);
  };
  const auto fail = [&](const std::string& reason) { failTo("write", reason); };
  if (dir.empty()) fail("no folder given");
  // A trailing slash ("out/") names the same folder; strip it so the sibling sits beside it.
  std::string target = resolveTarget(fs::path(dir).lexically_normal().string());
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) fail(std::generic_category().message(errno));
  if (exists) {
    if (!S_ISDIR(st.st_mode)) fail(std::string("it is ") + kindOf(st.st_mode) + ", not a folder");
    // Replacing a folder deletes it: only an empty one or an earlier dump, never `--dump .`.
    std::error_code ec;
    const std::string foreign = firstForeignEntry(target, ownNames, ec);
    if (!foreign.empty())
      fail("it holds other files ('" + foreign +
           "'); give a new or empty folder, or one an earlier dump wrote");
    if (ec) fail(ec.message());
  } else {
    std::error_code ec;
    fs::create_directories(parentOf(target), ec);
    if (ec) failTo("create", ec.message());
  }
  removeStaleTemporaries(target, &ownNames);
  std::string temp;
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = temporaryName(target);
    if (::mkdir(temp.c_str(), 0777) == 0) break;
    if (errno != EEXIST) failTo("create", std::generic_category().message(errno));
    temp.clear();
  }
  if (temp.empty()) fail(std::generic_category().message(EEXIST));
  const auto removeTemp = [&] {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
  };
  try {
    fill(temp);
  } catch (const Error& e) {
    removeTemp();
    throw Error(e.kind(), "cannot write " + what + " " + dir + ": " + e.what());
  } catch (...) {
    removeTemp();
    throw;
  }
  syncFolder(temp);
  if (exists) {
    // One atomic step swaps the folders; the old one then sits at `temp` and is removed.
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      removeTemp();
      fail(std::generic_category().message(err));
    }
  } else if (std::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    removeTemp();
    fail(std::generic_category().message(err));
  }
  removeTemp();
  syncFolder(parentOf(target));
}

int openRegularFile(const std::string& path, uint64_t maxBytes, uint64_t* size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throwReadError(path, errno);
  checkReadable(path, st, maxBytes);
  // O_NONBLOCK: if the path was swapped for a FIFO after the stat, open returns instead of
  // waiting for a writer; the fstat below then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throwReadError(path, errno);
  struct stat opened {};
  if (::fstat(fd, &opened) != 0) {
    const int err = errno;
    ::close(fd);
    throwReadError(path, err);
  }
  try {
    checkReadable(path, opened, maxBytes);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (size) *size = static_cast<uint64_t>(opened.st_size);
  return fd;
}

void requireRegularFile(const std::string& path, uint64_t maxBytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throwReadError(path, errno);
  checkReadable(path, st, maxBytes);
}

std::string readFile(const std::string& path, uint64_t maxBytes) {
  uint64_t size = 0;
  const int fd = openRegularFile(path, maxBytes, &size);
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throwReadError(path, err);
    }
    bytes.append(buffer, static_cast<std::size_t>(n));
    if (bytes.size() > maxBytes) {  // the file grew after the stat
      ::close(fd);
      throw Error(ErrorKind::ResourceLimit, "cannot read " + path + ": more than the limit of " +
                                                std::to_string(maxBytes) + " bytes");
    }
  }
  ::close(fd);
  return bytes;
}

}  // namespace attnscope
