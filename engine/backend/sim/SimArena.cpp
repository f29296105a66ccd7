#include "backend/sim/SimArena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/Device.h"
#include "core/Error.h"

namespace strata {

namespace {
std::array<std::atomic<SimArena*>, kSimDeviceCount> g_arenas{};

// A host access to device memory is a bug in the engine: say which device
// before the default action ends the process (a test then fails loudly).
void on_segv(int sig, siginfo_t* info, void*) {
  const int dev = sim_arena_of(info->si_addr);
  if (dev >= 0) {
    char msg[160];
    const int n = std::snprintf(msg, sizeof msg,
                                "strata: host code touched sim:%d device memory at %p without a copy or synchronisation\n",
                                dev, info->si_addr);
    if (n > 0) (void)!write(2, msg, static_cast<size_t>(n));
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_segv_reporter() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    struct sigaction old {};
    sigaction(SIGSEGV, nullptr, &old);
    // Leave a handler someone else installed (a sanitizer) alone.
    if (old.sa_handler == SIG_DFL) sigaction(SIGSEGV, &sa, nullptr);
  });
}
}  // namespace

int sim_arena_of(const void* p) {
  for (size_t i = 0; i < g_arenas.size(); ++i) {
    SimArena* a = g_arenas[i].load(std::memory_order_acquire);
    if (a && a->contains(p)) return static_cast<int>(i);
  }
  return -1;
}

SimArena* registered_sim_arena(int device_index) {
  return g_arenas.at(static_cast<size_t>(device_index)).load(std::memory_order_acquire);
}

void register_sim_arena(int device_index, SimArena* arena) {
  g_arenas.at(static_cast<size_t>(device_index)).store(arena, std::memory_order_release);
}

SimArena::SimArena(int device_index, size_t capacity) : device_index_(device_index), capacity_(capacity) {
  const int fd = memfd_create(("strata-sim" + std::to_string(device_index)).c_str(), MFD_CLOEXEC);
  if (fd >= 0 && ftruncate(fd, static_cast<off_t>(capacity)) == 0) {
    void* dev = mmap(nullptr, capacity, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    void* rw = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (dev != MAP_FAILED && rw != MAP_FAILED) {
      device_base_ = static_cast<char*>(dev);
      rw_base_ = static_cast<char*>(rw);
      trapping_ = true;
    } else {
      if (dev != MAP_FAILED) munmap(dev, capacity);
      if (rw != MAP_FAILED) munmap(rw, capacity);
    }
  }
  if (fd >= 0) close(fd);
  if (!trapping_) {
    // No second view: one ordinary mapping serves both (accesses go untrapped).
    void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw runtime_error("sim:" + std::to_string(device_index) + ": cannot reserve device memory");
    device_base_ = rw_base_ = static_cast<char*>(p);
  }
  install_segv_reporter();
}

SimArena::~SimArena() {
  munmap(device_base_, capacity_);
  if (rw_base_ != device_base_) munmap(rw_base_, capacity_);
}

size_t SimArena::round(size_t bytes) { return (std::max<size_t>(bytes, 1) + 255) / 256 * 256; }

void* SimArena::allocate(size_t bytes, bool* fresh) {
  const size_t size = round(bytes);
  std::lock_guard lock(mutex_);
  auto it = free_.find(size);
  if (it != free_.end()) {
    const size_t offset = it->second;
    free_.erase(it);
    in_use_ += size;
    *fresh = false;
    return device_base_ + offset;
  }
  if (top_ + size > capacity_) return nullptr;
  const size_t offset = top_;
  top_ += size;
  in_use_ += size;
  *fresh = true;
  return device_base_ + offset;
}

void SimArena::deallocate(void* p, size_t bytes) {
  if (!p) return;
  const size_t size = round(bytes);
  std::lock_guard lock(mutex_);
  free_.emplace(size, static_cast<size_t>(static_cast<char*>(p) - device_base_));
  in_use_ -= size;
}

size_t SimArena::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

}  // namespace strata
