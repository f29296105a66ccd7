#include "core/HostAllocator.h"

#include <cstdlib>

namespace strata {

HostAllocator& HostAllocator::instance() {
  static HostAllocator* a = new HostAllocator();  // never destroyed: tensors may outlive statics
  return *a;
}

size_t HostAllocator::round(size_t bytes) {
  // Small blocks to 64 bytes, large ones to pages: nearly-equal sizes share a list.
  if (bytes <= 4096) return (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  return (bytes + 4095) / 4096 * 4096;
}

void* HostAllocator::allocate(size_t bytes) {
  const size_t size = round(bytes);
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end()) {
      void* p = it->second;
      free_.erase(it);
      cached_ -= size;
      return p;
    }
  }
  return std::aligned_alloc(64, size);
}

void HostAllocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  const size_t size = round(bytes);
  std::lock_guard lock(mutex_);
  if (cached_ + size > cap_) {
    std::free(p);
    return;
  }
  free_.emplace(size, p);
  cached_ += size;
}

void HostAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  for (auto& [size, p] : free_) std::free(p);
  free_.clear();
  cached_ = 0;
}

size_t HostAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

}  // namespace strata
