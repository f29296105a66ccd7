#pragma once
// Device memory whose every operation does nothing: the base of the tests'
// stand-in devices, which override what they exercise (allocation, timing
// marks).
#include "core/DeviceMemory.h"

class InertDeviceMemory : public strata::DeviceMemory {
public:
  void* allocate(size_t) override { return nullptr; }
  void deallocate(void*, size_t) override {}
  void copy_from_host(void*, const void*, size_t) override {}
  void copy_to_host(void*, const void*, size_t) override {}
  void copy(void*, const void*, size_t) override {}
  void fill32(void*, int64_t, uint32_t) override {}
  void synchronize() override {}
  strata::EventPtr record_event() override { return nullptr; }
  void wait_event(const strata::EventPtr&) override {}
};
