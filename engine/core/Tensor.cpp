#include "core/Tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

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

std::atomic<uint64_t> g_next_id{1};
}  // namespace

uint64_t next_tensor_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

std::string dtype_name(DType d) { return d == DType::Float32 ? "float32" : "int32"; }

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  for (auto d : shape.dims())
    if (d < 0) throw runtime_error("negative dimension in shape " + shape.str());
  Tensor t;
  t.buffer_ = std::make_shared<HostBuffer>(static_cast<size_t>(shape.numel()) * 4);
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.id_ = next_tensor_id();
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.raw(), 0, static_cast<size_t>(t.numel()) * 4);
  return t;
}

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = empty(shape);
  t.fill(value);
  return t;
}

Tensor Tensor::from(const Shape& shape, std::span<const float> values) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw runtime_error("Tensor::from: " + std::to_string(values.size()) + " values for shape " + shape.str());
  Tensor t = empty(shape);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

Tensor Tensor::from_ints(const Shape& shape, std::span<const int32_t> values) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw runtime_error("Tensor::from_ints: " + std::to_string(values.size()) + " values for shape " + shape.str());
  Tensor t = empty(shape, DType::Int32);
  std::copy(values.begin(), values.end(), t.ints());
  return t;
}

float Tensor::item() const {
  if (numel() != 1) throw runtime_error("item() on a tensor of shape " + shape_.str());
  return dtype_ == DType::Float32 ? *data() : static_cast<float>(*ints());
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_);
  std::memcpy(t.raw(), raw(), static_cast<size_t>(numel()) * 4);
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

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  if (shape_.rank() == 0 || begin < 0 || end < begin || end > shape_[0])
    throw runtime_error("slice_rows out of range for shape " + shape_.str());
  std::vector<int64_t> dims = shape_.dims();
  dims[0] = end - begin;
  Tensor t = empty(Shape(dims), dtype_);
  const size_t row = static_cast<size_t>(shape_.inner()) * 4;
  if (end > begin) std::memcpy(t.raw(), static_cast<char*>(raw()) + static_cast<size_t>(begin) * row, static_cast<size_t>(end - begin) * row);
  return t;
}

void Tensor::copy_from(const Tensor& other) {
  if (other.numel() != numel()) throw runtime_error("copy_from: size mismatch " + other.shape_.str() + " vs " + shape_.str());
  std::memcpy(raw(), other.raw(), static_cast<size_t>(numel()) * 4);
}

void Tensor::fill(float value) {
  if (dtype_ == DType::Float32) {
    std::fill(data(), data() + numel(), value);
  } else {
    std::fill(ints(), ints() + numel(), static_cast<int32_t>(value));
  }
}

}  // namespace strata
