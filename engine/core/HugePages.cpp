#include "core/HugePages.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace strata {

void advise_huge_pages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  // Only whole huge pages inside the range: the advice covers pages, and
  // the edges may belong to other allocations.
  const uintptr_t lo = (begin + kHuge - 1) & ~(kHuge - 1), hi = (begin + bytes) & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // advice: failure changes nothing
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace strata
