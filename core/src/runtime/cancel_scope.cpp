// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/cancel_scope.h"

#include "attnscope/error.h"

namespace attnscope {
namespace {
thread_local const std::atomic<bool>* t_flag = nullptr;
}  // namespace

CancelScope::CancelScope(const std::atomic<bool>* flag) : m_previous(t_flag) { t_flag = flag; }

CancelScope::~CancelScope() { t_flag = m_previous; }

const std::atomic<bool>* CancelScope::current() { return t_flag; }

void CancelScope::poll() {
  if (t_flag && t_flag->load(std::memory_order_relaxed))
    throw Error(ErrorKind::Cancelled, "cancelled");
}

}  // namespace attnscope
