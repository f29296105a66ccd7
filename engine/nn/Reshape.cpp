#include "nn/Reshape.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/Flatten.h"

namespace strata::nn {

ReshapeLayer::ReshapeLayer(std::vector<int64_t> target) : target_(std::move(target)) {
  int unknown = 0;
  for (auto d : target_) {
    if (d == -1) ++unknown;
    else if (d <= 0) throw bad_input("Reshape: target dimensions must be positive (or one -1)");
  }
  if (unknown > 1 || target_.empty()) throw bad_input("Reshape: at most one -1 in a non-empty target shape");
}

Shape ReshapeLayer::output_shape(const Shape& input) const {
  int64_t known = 1;
  for (auto d : target_)
    if (d != -1) known *= d;
  std::vector<int64_t> out = target_;
  for (auto& d : out)
    if (d == -1) {
      if (input.numel() % known) throw bad_input("Reshape: cannot reshape " + input.str() + " to the target");
      d = input.numel() / known;
    }
  if (Shape(out).numel() != input.numel())
    throw bad_input("Reshape: " + input.str() + " has " + std::to_string(input.numel()) + " values, target " +
                    Shape(out).str() + " has " + std::to_string(Shape(out).numel()));
  return Shape(out);
}

Json ReshapeLayer::config() const { return Json{{"type", "reshape"}, {"target_shape", target_}}; }

Tensor ReshapeLayer::call(const Tensor& x, bool) {
  std::vector<int64_t> dims{x.shape().rank() ? x.shape()[0] : 1};
  Shape per = output_shape(Shape(std::vector<int64_t>(x.shape().dims().begin() + 1, x.shape().dims().end())));
  for (auto d : per.dims()) dims.push_back(d);
  return reshape_op(x, Shape(dims));
}

LayerPtr Reshape(std::vector<int64_t> target) { return std::make_shared<ReshapeLayer>(std::move(target)); }

}  // namespace strata::nn
