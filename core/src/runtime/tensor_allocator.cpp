// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/tensor_allocator.h"

namespace attnscope::detail {

// Transparent huge pages (madvise(MADV_HUGEPAGE) on 2 MiB-aligned blocks) were tried for the big
// results and measured worse on this project's machines: attnscope-cli on GPT-2 at T = 1000 spent
// 0.8 to 3.2 s of system time with them, 0.64 s without (THP "defrag" compacts on fault). So
// blocks are plain operator new; glibc maps the big ones (ensureRuntime's mmap threshold).
void* allocateTensorBytes(std::size_t bytes) { return ::operator new(bytes); }

void freeTensorBytes(void* p, std::size_t) noexcept { ::operator delete(p); }

}  // namespace attnscope::detail
