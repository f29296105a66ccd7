#pragma once
#include <map>
#include <mutex>

#include "core/Tensor.h"

#include "nn/Layer.h"

namespace strata::nn {

// Inverted dropout: in training, zero a fraction `rate` and scale the rest by
// 1/(1-rate); identity at inference. Masks come from a counter-based stream
// keyed by (layer seed, call number, replica), so they are reproducible.
class DropoutLayer final : public Layer {
public:
  explicit DropoutLayer(float rate);
  std::string type() const override { return "dropout"; }
  Shape output_shape(const Shape& input) const override { return input; }
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;
  float rate() const { return rate_; }
  Json extra_state() const override;
  void set_extra_state(const Json& state) override;
  void count_replayed_step() override;

private:
  float rate_;
  // Calls so far per replica, so the key does not depend on which replica
  // thread ran first. The kernels read the count from a copy in the
  // replica's device memory (advanced there, a float: exact to 2^24 calls);
  // the host keeps its own count for checkpoints, without reading the device.
  mutable std::mutex mutex_;
  std::map<int, uint64_t> calls_;
  std::map<int, Tensor> device_calls_;
};

LayerPtr Dropout(float rate);

}  // namespace strata::nn
