#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/Device.h"
#include "core/Shape.h"

namespace strata {

enum class DType { Float32, Int32 };

// Host or device memory owned by tensors. Kept apart from Tensor so a CUDA
// backend can hand out device buffers from its caching allocator.
class Buffer {
public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t bytes() const = 0;
  virtual Device device() const = 0;
};

// A dense, row-major array with a shape. Copies share the buffer (like
// tf.Tensor handles); clone() makes a deep copy. Each freshly produced tensor
// gets a new id, which the gradient tape uses to link ops; a Variable keeps
// its id while its values are updated in place.
class Tensor {
public:
  Tensor() = default;
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32);
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
  static Tensor full(const Shape& shape, float value);
  static Tensor scalar(float value) { return full(Shape{}, value); }
  static Tensor from(const Shape& shape, std::span<const float> values);
  static Tensor from_ints(const Shape& shape, std::span<const int32_t> values);

  bool defined() const { return buffer_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return shape_.numel(); }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  uint64_t id() const { return id_; }

  float* data() { return static_cast<float*>(raw()); }
  const float* data() const { return static_cast<const float*>(raw()); }
  int32_t* ints() { return static_cast<int32_t*>(raw()); }
  const int32_t* ints() const { return static_cast<const int32_t*>(raw()); }
  std::span<float> span() { return {data(), static_cast<size_t>(numel())}; }
  std::span<const float> span() const { return {data(), static_cast<size_t>(numel())}; }

  // The single value of a one-element tensor (loss, reduced metric).
  float item() const;
  Tensor clone() const;
  // Same buffer, new shape (numel must match), new id: ops that reshape
  // record the link on the tape themselves.
  Tensor reshape(const Shape& shape) const;
  // Rows [begin, end) of the first dimension as a new tensor (copy).
  Tensor slice_rows(int64_t begin, int64_t end) const;
  void copy_from(const Tensor& other);
  void fill(float value);

private:
  void* raw() const { return buffer_ ? static_cast<char*>(buffer_->data()) + offset_bytes_ : nullptr; }

  std::shared_ptr<Buffer> buffer_;
  size_t offset_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::Float32;
  uint64_t id_ = 0;
};

uint64_t next_tensor_id();
std::string dtype_name(DType d);

}  // namespace strata
