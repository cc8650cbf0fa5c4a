// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace attnscope {

/// Applies the default thread count once per process, unless setThreadCount was called first.
void ensureRuntime();

}  // namespace attnscope
