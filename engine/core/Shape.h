#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace strata {

// Row-major dimensions. Images use NHWC throughout the engine (docs/tensors.md).
class Shape {
public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims_[static_cast<size_t>(i)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : dims_) n *= d;
    return n;
  }
  // Product of all dims but the first: the size of one example.
  int64_t inner() const {
    int64_t n = 1;
    for (size_t i = 1; i < dims_.size(); ++i) n *= dims_[i];
    return n;
  }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

  std::string str() const {
    std::string s = "(";
    for (size_t i = 0; i < dims_.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(dims_[i]);
    }
    return s + ")";
  }

private:
  std::vector<int64_t> dims_;
};

}  // namespace strata
