// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnscope {

/// The one way attnscope writes a file, whatever the path names:
/// - a regular file or a missing path: written to a temporary file beside it, fsynced and renamed
///   over it, so readers see the old file or the complete new one, never a partial write;
/// - a symlink: followed, and its target written that way (the link stays a link), when its target
///   is one the user could have named: in the link's own folder, and not as root. Otherwise a
///   planted link could make attnscope overwrite any file (as root, /etc/passwd), so it is refused
///   unless setFollowAnyOutputLink(true) (the CLI's --force). Links to pipes, sockets and character
///   devices (/dev/stdout, a terminal) are written in place like those, never replaced;
/// - a device, a FIFO or a socket (/dev/null, /dev/stdout, a pipe): written directly, because
///   renaming over it would replace the device with a regular file;
/// - a directory: refused.
/// The temporary file is removed on every error path; leftovers of processes that died (kill -9)
/// are removed the next time the same path is written.
class OutputFile final {
 public:
  /// Throws Error(Io) "cannot write <path>: <reason>".
  explicit OutputFile(const std::string& path);
  ~OutputFile();  // discards the temporary file unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const char* data, std::size_t size);  // throws Error(Io)
  /// Flushes and puts the file in place. Throws Error(Io); the old file stays on failure.
  void commit();
  /// True when the target is a device or FIFO written in place (no temporary file).
  bool direct() const { return m_direct; }

 private:
  void fail(int errnoValue);
  std::string m_path;    // as given, for messages
  std::string m_target;  // the file really replaced (symlinks resolved)
  std::string m_temp;    // empty when direct
  int m_fd = -1;
  bool m_direct = false;
};

/// Writes through every symbolic link, as before issue 34 (attnscope-cli --force). Process-wide.
void setFollowAnyOutputLink(bool follow);

/// Throws Error(Io) now, before any work, when OutputFile(path) would certainly fail: a folder, a
/// refused symbolic link,
/// a missing parent folder, or no permission to create the file (or write the device).
void checkWritable(const std::string& path);

/// OutputFile for bytes already in memory.
void writeOutputFile(const std::string& path, const std::string& bytes);

/// Fills a fresh temporary folder beside `dir` through `fill(tempDir)`, then puts it in place of
/// `dir` with one rename (an atomic exchange when `dir` exists), so a reader sees the old folder
/// or the new one, never a mix. An existing `dir` is replaced only when it is empty or holds only
/// names in `ownNames` (a previous dump), never a folder of other files. On failure the temporary
/// folder is removed and `dir` is untouched. Throws Error(Io) naming `what` and the folder.
void replaceFolderAtomically(const std::string& dir, const std::vector<std::string>& ownNames,
                             const std::function<void(const std::string& tempDir)>& fill,
                             const std::string& what);

/// Size caps for readFile, by what the file is.
constexpr uint64_t kMaxConfigBytes = 16ull << 20;      // config.json, an index, a session
constexpr uint64_t kMaxTokenizerBytes = 256ull << 20;  // tokenizer.json, vocab.json, merges.txt
constexpr uint64_t kMaxReadBytes = 4ull << 30;         // anything else read whole

/// The whole content of a regular file of at most maxBytes. The path is stat'ed before it is
/// opened (and opened non-blocking, checked again), so a FIFO, device or directory is refused
/// instead of blocking or reading forever. Throws Error(Io) "cannot read <path>: <reason>", or
/// Error(ResourceLimit) when the file is larger than maxBytes.
std::string readFile(const std::string& path, uint64_t maxBytes = kMaxReadBytes);

/// Opens a regular file for reading the same way (stat first, O_NONBLOCK, fstat again) and
/// returns the descriptor; *size receives its size. Throws like readFile.
int openRegularFile(const std::string& path, uint64_t maxBytes, uint64_t* size);

/// Throws like readFile unless `path` is a regular file of at most maxBytes; for readers that
/// open the file themselves (streams).
void requireRegularFile(const std::string& path, uint64_t maxBytes = kMaxReadBytes);

/// "cannot <verb> <path>: <reason>", the one wording for file errors.
std::string fileErrorMessage(const char* verb, const std::string& path, int errnoValue);

}  // namespace attnscope
