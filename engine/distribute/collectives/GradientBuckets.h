#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include "core/Tensor.h"
#include "distribute/collectives/CrossDeviceOps.h"

namespace strata {

// One replica's gradient buckets for a reduction that overlaps the backward
// pass (PyTorch DDP's Reducer, Horovod's fusion buffer): gradients are copied
// into a bucket in the order the tape finalises them, and a bucket is handed
// to the collective as soon as it holds `bucket_bytes`, while the backward
// pass computes the next ones. Every replica finalises the same gradients in
// the same order, so their buckets line up.
//
// Buckets keep their device memory from step to step: a captured step (CUDA
// graph) replays the same copies into the same buffers.
class GradientBuckets {
public:
  using Launch = std::function<void(DeviceSpan)>;
  GradientBuckets(size_t bucket_bytes, Device device) : capacity_(std::max<size_t>(1, bucket_bytes / sizeof(float))), device_(device) {}

  // Gradient `index` is final: copy it into the open bucket; launch the
  // bucket when it is full.
  void add(size_t index, const Tensor& grad, const Launch& launch);
  // Launches the last, partly filled bucket. True when any gradient was added.
  bool flush(const Launch& launch);
  // After the collectives completed (in stream order): the sums back into
  // `grads`, which must hold a tensor for every index added this step.
  void unpack(std::vector<Tensor>& grads);
  // Forgets a step that ended in an error before unpack (the memory stays).
  void clear();

private:
  struct Entry {
    size_t index, offset, count;
  };
  struct Bucket {
    Tensor storage;
    std::vector<Entry> entries;
    size_t used = 0;
  };
  void launch_open(const Launch& launch);

  size_t capacity_;  // floats per bucket (a larger gradient gets a bucket of its own)
  Device device_;
  std::vector<Bucket> buckets_;
  size_t open_ = 0;  // the bucket being filled
};

}  // namespace strata
