#include "core/Tensor.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "core/DeviceMemory.h"
#include "core/Error.h"
#include "core/HostAllocator.h"

namespace strata {

namespace {
// 64-byte aligned host memory, the width of an AVX-512 register and a cache line.
class HostBuffer final : public Buffer {
public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    data_ = HostAllocator::instance().allocate(bytes);
    if (!data_) throw runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  }
  ~HostBuffer() override { HostAllocator::instance().deallocate(data_, bytes_); }
  void* data() override { return data_; }
  size_t bytes() const override { return bytes_; }
  Device device() const override { return Device{DeviceKind::Cpu, 0}; }

private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Memory from a device's allocator. Freed at once into its cache: reuse is
// safe because the device runs its work in the order it was queued.
class DeviceBuffer final : public Buffer {
public:
  DeviceBuffer(const Device& device, size_t bytes)
      : device_(device), memory_(device_memory(device)), bytes_(bytes), data_(memory_.allocate(bytes)) {}
  ~DeviceBuffer() override { memory_.deallocate(data_, bytes_); }
  void* data() override { return data_; }
  size_t bytes() const override { return bytes_; }
  Device device() const override { return device_; }

private:
  Device device_;
  DeviceMemory& memory_;
  size_t bytes_;
  void* data_;
};

std::atomic<uint64_t> g_next_id{1};
}  // namespace

uint64_t next_tensor_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

std::string dtype_name(DType d) {
  switch (d) {
    case DType::Float32: return "float32";
    case DType::Int32: return "int32";
    case DType::UInt8: return "uint8";
  }
  return "?";
}

void copy_bytes(const Device& dst_device, void* dst, const Device& src_device, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_device.is_host() && src_device.is_host()) {
    std::memcpy(dst, src, bytes);
  } else if (dst_device.is_host()) {
    DeviceMemory& m = device_memory(src_device);
    m.copy_to_host(dst, src, bytes);
    m.synchronize();
  } else if (src_device.is_host()) {
    device_memory(dst_device).copy_from_host(dst, src, bytes);
  } else if (dst_device.kind == src_device.kind) {
    // Peer copy in the destination's stream, after the source's queued work;
    // the source's later work (a write, or its memory freed and reused) waits
    // for the copy in turn.
    DeviceMemory& d = device_memory(dst_device);
    if (dst_device == src_device) {
      d.copy(dst, src, bytes);
      return;
    }
    DeviceMemory& s = device_memory(src_device);
    d.wait_event(s.record_event());
    d.copy(dst, src, bytes);
    s.wait_event(d.record_event());
  } else {
    // Different kinds of device: through the host.
    std::unique_ptr<char[]> staging(new char[bytes]);
    copy_bytes(Device{}, staging.get(), src_device, src, bytes);
    copy_bytes(dst_device, dst, Device{}, staging.get(), bytes);
  }
}

void* Tensor::host_raw(const char* accessor) const {
  if (buffer_ && !buffer_->device().is_host())
    throw runtime_error("tensor " + shape_.str() + " lives on " + buffer_->device().str() + ": " + accessor +
                        " reads host memory only; copy it with to(cpu) first");
  return raw();
}

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  for (auto d : shape.dims())
    if (d < 0) throw runtime_error("negative dimension in shape " + shape.str());
  Tensor t;
  const size_t bytes = static_cast<size_t>(shape.numel()) * element_size(dtype);
  if (device.is_host()) t.buffer_ = std::make_shared<HostBuffer>(bytes);
  else t.buffer_ = std::make_shared<DeviceBuffer>(device, bytes);
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.id_ = next_tensor_id();
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  t.fill(0.0f);
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, const Device& device) {
  Tensor t = empty(shape, DType::Float32, device);
  t.fill(value);
  return t;
}

Tensor Tensor::from(const Shape& shape, std::span<const float> values, const Device& device) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw runtime_error("Tensor::from: " + std::to_string(values.size()) + " values for shape " + shape.str());
  Tensor t = empty(shape, DType::Float32, device);
  copy_bytes(device, t.raw(), Device{}, values.data(), t.bytes());
  return t;
}

Tensor Tensor::from_ints(const Shape& shape, std::span<const int32_t> values, const Device& device) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw runtime_error("Tensor::from_ints: " + std::to_string(values.size()) + " values for shape " + shape.str());
  Tensor t = empty(shape, DType::Int32, device);
  copy_bytes(device, t.raw(), Device{}, values.data(), t.bytes());
  return t;
}

float Tensor::item() const {
  if (numel() != 1) throw runtime_error("item() on a tensor of shape " + shape_.str());
  return dtype_ == DType::Float32 ? *data() : static_cast<float>(*ints());
}

std::vector<float> Tensor::values() const {
  if (dtype_ != DType::Float32) throw runtime_error("values() on a " + dtype_name(dtype_) + " tensor");
  std::vector<float> out(static_cast<size_t>(numel()));
  copy_bytes(Device{}, out.data(), device(), raw(), bytes());
  return out;
}

Tensor Tensor::clone() const { return to_copy_on(device()); }

Tensor Tensor::to(const Device& device) const {
  if (!defined() || this->device().same_memory(device)) return *this;
  return to_copy_on(device);
}

Tensor Tensor::to_copy_on(const Device& device) const {
  Tensor t = empty(shape_, dtype_, device);
  copy_bytes(device, t.raw(), this->device(), raw(), bytes());
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (shape.numel() != numel())
    throw runtime_error("cannot reshape " + shape_.str() + " to " + shape.str());
  Tensor t = *this;
  t.shape_ = shape;
  t.id_ = next_tensor_id();
  return t;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const { return rows(begin, end).clone(); }

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  if (shape_.rank() == 0 || begin < 0 || end < begin || end > shape_[0])
    throw runtime_error("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for shape " +
                        shape_.str());
  std::vector<int64_t> dims = shape_.dims();
  dims[0] = end - begin;
  Tensor t = *this;
  t.shape_ = Shape(dims);
  t.offset_bytes_ += static_cast<size_t>(begin) * static_cast<size_t>(shape_.inner()) * element_size(dtype_);
  t.id_ = next_tensor_id();
  return t;
}

void Tensor::copy_rows_from(const Tensor& src, int64_t begin, int64_t end, int64_t at) {
  if (src.shape_.rank() == 0 || shape_.rank() == 0 || src.shape_.inner() != shape_.inner() || begin < 0 ||
      end < begin || end > src.shape_[0] || at < 0 || at + (end - begin) > shape_[0])
    throw runtime_error("copy_rows_from: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " +
                        src.shape_.str() + " do not fit " + shape_.str() + " at row " + std::to_string(at));
  if (src.dtype_ != dtype_) throw runtime_error("copy_rows_from: " + dtype_name(src.dtype_) + " rows into a " + dtype_name(dtype_) + " tensor");
  const size_t row = static_cast<size_t>(shape_.inner()) * element_size(dtype_);
  copy_bytes(device(), static_cast<char*>(raw()) + static_cast<size_t>(at) * row, src.device(),
             static_cast<const char*>(src.raw()) + static_cast<size_t>(begin) * row, static_cast<size_t>(end - begin) * row);
}

void Tensor::copy_from(const Tensor& other) {
  if (other.numel() != numel() || other.bytes() != bytes())
    throw runtime_error("copy_from: size mismatch " + other.shape_.str() + " vs " + shape_.str());
  copy_bytes(device(), raw(), other.device(), other.raw(), bytes());
}

void Tensor::fill(float value) {
  if (dtype_ == DType::UInt8) throw runtime_error("fill: uint8 tensors hold raw input only");
  const uint32_t word = dtype_ == DType::Float32 ? std::bit_cast<uint32_t>(value)
                                                 : std::bit_cast<uint32_t>(static_cast<int32_t>(value));
  if (!on_host()) {
    device_memory(device()).fill32(raw(), numel(), word);
  } else if (dtype_ == DType::Float32) {
    std::fill(data(), data() + numel(), value);
  } else {
    std::fill(ints(), ints() + numel(), static_cast<int32_t>(value));
  }
}

}  // namespace strata
