#pragma once
#include <cstddef>
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

// A copy of `v` in memory advised for huge pages when it is large enough
// for that to matter (several 2 MiB pages); else `v` itself.
template <typename T>
std::vector<T> on_huge_pages(std::vector<T> v) {
  constexpr size_t kWorthIt = size_t{8} << 20;
  if (v.size() * sizeof(T) < kWorthIt) return v;
  std::vector<T> out;
  out.reserve(v.size());  // fresh, untouched pages from mmap
  advise_huge_pages(out.data(), v.size() * sizeof(T));
  out.assign(v.begin(), v.end());
  return out;
}

}  // namespace strata
