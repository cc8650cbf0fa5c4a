// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <c10/util/Exception.h>

#include <new>
#include <string>

#include "attnscope/error.h"

namespace attnscope {

/// LibTorch's message without its C++ backtrace: the first line, which is all a person can act
/// on ("DefaultCPUAllocator: can't allocate memory: you tried to allocate 68719476736 bytes").
inline std::string torchMessage(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  if (const auto eol = m.find('\n'); eol != std::string::npos) m.resize(eol);
  return m;
}

/// Runs f and turns what LibTorch throws into attnscope::Error with one line: out of memory
/// (c10's allocator error or std::bad_alloc) becomes ResourceLimit, any other c10::Error Internal.
/// Front ends then show one line and exit 2 (or 1), never a backtrace.
template <typename F>
auto withTorchErrors(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    const std::string m = torchMessage(e);
    const bool oom =
        m.find("allocate") != std::string::npos || m.find("out of memory") != std::string::npos;
    throw Error(oom ? ErrorKind::ResourceLimit : ErrorKind::Internal,
                what + ": " + (oom ? "out of memory (" + m + "); use smaller sizes" : m));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::ResourceLimit,
                what + ": out of memory; use smaller sizes or a lower --memory-limit");
  }
}

}  // namespace attnscope
