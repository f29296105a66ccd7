#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace strata {

// A shuffled dataset is read a row at a time at random places in tens of
// megabytes: with 4 KiB pages nearly every row misses the TLB, and on a
// virtual machine each miss is a two-level page walk (measured: about a
// quarter of the time a replica spends gathering its rows). Where
// transparent huge pages are "madvise" (Debian's default), a range asked for
// before it is first written is backed by 2 MiB pages. Best effort: without
// THP nothing changes.
void advise_huge_pages(const void* data, size_t bytes);

// An allocator whose large blocks (several 2 MiB pages) are 2 MiB-aligned,
// fresh and advised for huge pages before anything writes them, so every
// copy of a container using it (a subset, a shard, a copied dataset) gets
// huge pages too. Small blocks come from malloc as usual.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20, kWorthIt = size_t{8} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    const bool huge = bytes >= kWorthIt;
    void* p = huge ? std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge) : std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    if (huge) advise_huge_pages(p, bytes);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace strata
