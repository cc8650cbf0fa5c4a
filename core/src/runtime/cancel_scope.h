// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>

namespace attnscope {

/// The run's cancel flag (RunRequest::cancel) for the code inside a layer: the blocked attention
/// kernel polls it between blocks of query rows and a compact weight's product between blocks of
/// weight rows, so that a long layer stops within a block instead of at its end (a layer of a
/// 2048-wide model at T = 32,768 takes about 100 s on two cores; a block a few seconds). The flag
/// is the calling thread's, installed for the layers by LayerStack::run; code on other threads
/// reads current() on the caller first.
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

  /// The innermost scope's flag on this thread; null outside a run.
  static const std::atomic<bool>* current();
  /// Throws Error(Cancelled) when the current flag is set.
  static void poll();

 private:
  const std::atomic<bool>* m_previous;
};

}  // namespace attnscope
