#pragma once
#include <map>
#include <mutex>

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

private:
  float rate_;
  // Per replica, so the key does not depend on which replica thread ran first.
  mutable std::mutex mutex_;
  std::map<int, uint64_t> calls_;
};

LayerPtr Dropout(float rate);

}  // namespace strata::nn
