// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace attnscope {

namespace detail {
/// Out of line, so that how tensor storage is obtained can change without touching the users
/// (see tensor_allocator.cpp for what was measured).
void* allocateTensorBytes(std::size_t bytes);
void freeTensorBytes(void* p, std::size_t bytes) noexcept;
}  // namespace detail

/// The allocator of FloatTensor's storage: `resize(n)` and `vector(n)` leave the elements
/// uninitialised (default-initialised, which for float means unwritten) because a model writes
/// every element of its results: zeroing 576 MB of GPT-2 attention first cost ~0.2 s a run.
/// A value given explicitly (`vector(n, 0.0f)`) is still written.
template <class T>
struct TensorAllocator {
  static_assert(std::is_trivially_destructible_v<T>, "for plain numbers only");
  using value_type = T;

  TensorAllocator() = default;
  template <class U>
  TensorAllocator(const TensorAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::allocateTensorBytes(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { detail::freeTensorBytes(p, n * sizeof(T)); }

  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no zero fill
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <class U>
  bool operator==(const TensorAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const TensorAllocator<U>&) const noexcept {
    return false;
  }
};

}  // namespace attnscope
