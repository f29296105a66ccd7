#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/Device.h"
#include "core/Shape.h"

namespace strata {

// UInt8 holds raw input only (image pixels on their way to a device, where
// they become floats): no op computes on it.
enum class DType { Float32, Int32, UInt8 };
inline size_t element_size(DType d) { return d == DType::UInt8 ? 1 : 4; }

// Memory owned by tensors: host memory, or a device's from its backend's
// caching allocator.
class Buffer {
public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t bytes() const = 0;
  virtual Device device() const = 0;
};

// A dense, row-major array with a shape on one device. Copies share the
// buffer (like tf.Tensor handles); clone() makes a deep copy on the same
// device. Each freshly produced tensor gets a new id, which the gradient tape
// uses to link ops; a Variable keeps its id while its values are updated in place.
//
// Memory belongs to the tensor's device. ptr()/int_ptr() are for that device's
// backend kernels only; the host accessors (data(), ints(), span(), item())
// work on host (cpu) tensors and throw, naming the device, on any other: data
// moves between host and device only through to() and copy_from().
class Tensor {
public:
  Tensor() = default;
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, const Device& device = {});
  static Tensor empty(const Shape& shape, const Device& device) { return empty(shape, DType::Float32, device); }
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32, const Device& device = {});
  static Tensor zeros(const Shape& shape, const Device& device) { return zeros(shape, DType::Float32, device); }
  static Tensor full(const Shape& shape, float value, const Device& device = {});
  static Tensor scalar(float value, const Device& device = {}) { return full(Shape{}, value, device); }
  // Host values, copied to `device` (queued in its stream order).
  static Tensor from(const Shape& shape, std::span<const float> values, const Device& device = {});
  static Tensor from_ints(const Shape& shape, std::span<const int32_t> values, const Device& device = {});

  bool defined() const { return buffer_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * element_size(dtype_); }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  bool on_host() const { return device().is_host(); }
  uint64_t id() const { return id_; }

  // Device pointers, for the backend of device() only.
  float* ptr() { return static_cast<float*>(raw()); }
  const float* ptr() const { return static_cast<const float*>(raw()); }
  int32_t* int_ptr() { return static_cast<int32_t*>(raw()); }
  const int32_t* int_ptr() const { return static_cast<const int32_t*>(raw()); }
  uint8_t* byte_ptr() { return static_cast<uint8_t*>(raw()); }
  const uint8_t* byte_ptr() const { return static_cast<const uint8_t*>(raw()); }

  // Host accessors: host tensors only.
  float* data() { return static_cast<float*>(host_raw("data()")); }
  const float* data() const { return static_cast<const float*>(host_raw("data()")); }
  int32_t* ints() { return static_cast<int32_t*>(host_raw("ints()")); }
  const int32_t* ints() const { return static_cast<const int32_t*>(host_raw("ints()")); }
  std::span<float> span() { return {data(), static_cast<size_t>(numel())}; }
  std::span<const float> span() const { return {data(), static_cast<size_t>(numel())}; }
  // The single value of a one-element host tensor (loss, reduced metric).
  float item() const;
  // Every element, copied to a host vector (waits for the device), as numpy().
  std::vector<float> values() const;

  Tensor clone() const;
  // This tensor on `device`: itself when it is already there. To the host the
  // copy is complete on return (the source device is synchronised); to a
  // device it is queued in that device's stream.
  Tensor to(const Device& device) const;
  // Same buffer, new shape (numel must match), new id: ops that reshape
  // record the link on the tape themselves.
  Tensor reshape(const Shape& shape) const;
  // Rows [begin, end) of the first dimension as a new tensor on the same device (copy).
  Tensor slice_rows(int64_t begin, int64_t end) const;
  // The same rows as a view: it shares this tensor's buffer (no copy), so
  // writes through either show in both. Splitting a global batch among
  // replicas that share its memory costs nothing this way (the copy was
  // ~3% of an MLP step, on the thread that drives the step).
  Tensor rows(int64_t begin, int64_t end) const;
  // Rows [begin, end) of `src` (any device) into this tensor's rows from `at`.
  void copy_rows_from(const Tensor& src, int64_t begin, int64_t end, int64_t at = 0);
  // Copies every element of `other` (any device). Into a host tensor from a
  // device the copy is complete on return; otherwise it is queued.
  void copy_from(const Tensor& other);
  void fill(float value);

private:
  void* raw() const { return buffer_ ? static_cast<char*>(buffer_->data()) + offset_bytes_ : nullptr; }
  void* host_raw(const char* accessor) const;
  Tensor to_copy_on(const Device& device) const;

  std::shared_ptr<Buffer> buffer_;
  size_t offset_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::Float32;
  uint64_t id_ = 0;
};

uint64_t next_tensor_id();
std::string dtype_name(DType d);
// Copies `bytes` between two places on any devices (host or not), in the
// stream order of the device side; a device-to-host copy is waited for.
void copy_bytes(const Device& dst_device, void* dst, const Device& src_device, const void* src, size_t bytes);

}  // namespace strata
