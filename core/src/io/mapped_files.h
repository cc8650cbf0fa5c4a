// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string>

namespace attnscope {

/// Safetensors files of at least this size are memory-mapped; smaller ones are read (as fast, and
/// no mapping stays alive).
constexpr std::size_t kSafetensorsMapFrom = 1 << 20;

/// Whether [data, data + bytes) lies inside one memory-mapped safetensors file that is open now.
/// Such bytes are file pages: the kernel can drop them under pressure and read them again, so
/// they do not count against a run's memory limit the way allocated tensors do.
bool insideMappedFile(const void* data, std::size_t bytes);

/// The regular file at `path` mapped whole, read-only, when it has at least kSafetensorsMapFrom
/// bytes and its filesystem can map it; else nullptr, and the caller reads it instead. *size is
/// the mapping's length. Throws like openRegularFile (missing, a FIFO, a device: never blocks).
/// MAP_PRIVATE + PROT_READ: the file is never written through the mapping (another process
/// truncating it meanwhile would raise SIGBUS; accepted, like every mmap-based loader).
void* mapLargeFile(const std::string& path, std::size_t* size);

}  // namespace attnscope
