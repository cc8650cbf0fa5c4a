// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>

namespace attnscope {

/// Safetensors files of at least this size are memory-mapped; smaller ones are read (as fast, and
/// no mapping stays alive).
constexpr std::size_t kSafetensorsMapFrom = 1 << 20;

/// Whether [data, data + bytes) lies inside one memory-mapped safetensors file that is open now.
/// Such bytes are file pages: the kernel can drop them under pressure and read them again, so
/// they do not count against a run's memory limit the way allocated tensors do.
bool insideMappedFile(const void* data, std::size_t bytes);

}  // namespace attnscope
