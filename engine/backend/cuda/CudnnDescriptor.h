#pragma once
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <utility>

#include "backend/cuda/CudnnLibrary.h"

namespace strata::cuda {

// One descriptor of cuDNN's backend API (a tensor, an operation, an engine
// configuration, an execution plan...), destroyed with its owner. Setting an
// attribute throws naming `what` and the attribute; finalize() answers
// cuDNN's status, since a refused engine configuration is an answer, not an
// error.
class CudnnDescriptor {
public:
  CudnnDescriptor(cudnnBackendDescriptorType_t type, std::string what) : what_(std::move(what)) {
    api().check(api().cudnnBackendCreateDescriptor(type, &d_), what_ + ": cudnnBackendCreateDescriptor");
  }
  ~CudnnDescriptor() {
    if (d_) api().cudnnBackendDestroyDescriptor(d_);
  }
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)), what_(std::move(o.what_)) {}
  CudnnDescriptor& operator=(CudnnDescriptor&&) = delete;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  // Attribute numbers are taken as integers too: cuDNN 9 marks some it
  // still needs (the handle of an operation graph and of a plan in the
  // releases before device properties) as deprecated.
  void set(int attribute, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    api().check(api().cudnnBackendSetAttribute(d_, static_cast<cudnnBackendAttributeName_t>(attribute), type, count,
                                               const_cast<void*>(values)),
                what_ + ": attribute " + std::to_string(attribute));
  }
  void set(int attribute, const CudnnDescriptor& value) {
    cudnnBackendDescriptor_t v = value.get();
    set(attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  }
  void set(int attribute, int64_t value) { set(attribute, CUDNN_TYPE_INT64, 1, &value); }
  cudnnStatus_t finalize() { return api().cudnnBackendFinalize(d_); }
  // finalize() that throws on anything but success.
  void finalized() { api().check(finalize(), what_ + ": cudnnBackendFinalize"); }

private:
  static const CudnnLibrary& api() { return CudnnLibrary::get(); }
  cudnnBackendDescriptor_t d_ = nullptr;
  std::string what_;
};

}  // namespace strata::cuda
