// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace attnscope {

/// What went wrong, so that front ends can choose an exit code or a banner without parsing text.
enum class ErrorKind {
  InvalidArgument,  // a bad flag value, size, text or configuration: the user can fix it
  ResourceLimit,    // the request would exceed a configured token or memory limit
  Unavailable,      // a device or file that is not there (e.g. cuda on a CPU-only build)
  Io,               // reading or writing a file failed
  Format,           // a file exists but its contents are malformed
  Cancelled,        // the caller asked to stop
  Internal,         // a bug or an unexpected library failure
};

/// The one exception type the core throws. The message is written for a person:
/// "heads (3) must divide d_model (64)".
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  ErrorKind kind() const { return m_kind; }
  /// True for errors the user caused and can fix (exit code 2 in the CLI).
  bool isUserError() const { return m_kind != ErrorKind::Internal; }

 private:
  ErrorKind m_kind;
};

}  // namespace attnscope
