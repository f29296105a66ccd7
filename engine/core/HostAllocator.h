#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace strata {

// A caching allocator for host tensors. A training step allocates the same
// sizes every step; large blocks from malloc are fresh mmaps whose pages the
// kernel must fault in and zero each time (measured: ~15% of a CNN step).
// Freed blocks are kept in per-size free lists and handed out again, up to a
// cap on the bytes held idle. 64-byte aligned.
class HostAllocator {
public:
  static HostAllocator& instance();
  void* allocate(size_t bytes);
  void deallocate(void* p, size_t bytes);
  // Returns every idle block to the system.
  void release_cached();
  size_t cached_bytes() const;

private:
  static size_t round(size_t bytes);

  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
  size_t cap_ = size_t{1} << 30;
};

}  // namespace strata
