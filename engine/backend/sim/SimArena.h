#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace strata {

// The memory of one simulated device. One shared-memory file is mapped twice:
// the addresses handed out (the "device pointers") are mapped with no access
// at all, so any host code that dereferences one faults at once; the device's
// own thread reaches the same bytes through a second, read-write mapping
// (host_view). Freed blocks are cached per size, as a CUDA caching allocator
// does, so a steady training step reuses the same addresses.
class SimArena {
public:
  SimArena(int device_index, size_t capacity);
  ~SimArena();
  SimArena(const SimArena&) = delete;
  SimArena& operator=(const SimArena&) = delete;

  // nullptr when the arena is full. `fresh` says whether the block is new
  // (not from the cache): the allocation counter counts those.
  void* allocate(size_t bytes, bool* fresh);
  void deallocate(void* p, size_t bytes);
  bool contains(const void* p) const { return p >= device_base_ && p < device_base_ + capacity_; }
  // The device thread's address of a device pointer of this arena.
  void* host_view(const void* device_ptr) const { return rw_base_ + (static_cast<const char*>(device_ptr) - device_base_); }
  size_t capacity() const { return capacity_; }
  size_t in_use() const;
  // False when the system could not give two views (no memfd): host access is then not trapped.
  bool trapping() const { return trapping_; }

private:
  static size_t round(size_t bytes);

  int device_index_;
  size_t capacity_;
  char* device_base_ = nullptr;
  char* rw_base_ = nullptr;
  bool trapping_ = false;
  mutable std::mutex mutex_;
  size_t top_ = 0;
  size_t in_use_ = 0;
  std::multimap<size_t, size_t> free_;  // rounded size -> offset
};

// Which simulated device's arena holds `p`, or -1.
int sim_arena_of(const void* p);
SimArena* registered_sim_arena(int device_index);
void register_sim_arena(int device_index, SimArena* arena);

}  // namespace strata
