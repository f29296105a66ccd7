#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>

namespace strata {

// Host memory of whole pages of its own, for buffers a device page-locks:
// page-locking registers pages, and a heap block sharing a page with memory
// registered elsewhere (another buffer, an MPI library's) would be refused
// by CUDA as registered twice. Rounds `bytes` up to whole pages; the memory
// is freed with std::free.
inline void* allocate_whole_pages(size_t& bytes) {
  constexpr size_t page = 4096;
  bytes = (bytes + page - 1) / page * page;
  void* p = std::aligned_alloc(page, bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace strata
