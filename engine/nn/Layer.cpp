#include "nn/Layer.h"

#include <nlohmann/json.hpp>

#include "core/Rng.h"

namespace strata::nn {

Layer::Layer() : seed_(next_op_seed()), devices_(variable_devices()) {}

void Layer::build(const Shape& input) {
  if (built_) return;
  VariableComponentsScope scope(devices_);
  create_variables(input);
  built_ = true;
}

std::vector<Variable*> Layer::trainable_variables() {
  std::vector<Variable*> out;
  for (size_t i = 0; i < variables_.size(); ++i)
    if (trainable_[i]) out.push_back(variables_[i].get());
  return out;
}

std::vector<Variable*> Layer::non_trainable_variables() {
  std::vector<Variable*> out;
  for (size_t i = 0; i < variables_.size(); ++i)
    if (!trainable_[i]) out.push_back(variables_[i].get());
  return out;
}

int64_t Layer::param_count() const {
  int64_t n = 0;
  for (auto& v : variables_) n += v->shape().numel();
  return n;
}

Json Layer::extra_state() const { return nullptr; }
void Layer::set_extra_state(const Json&) {}

Variable* Layer::add_variable(const std::string& suffix, Tensor initial, bool trainable) {
  trainable_.push_back(trainable);
  variables_.push_back(std::make_unique<Variable>(name_ + "/" + suffix, std::move(initial)));
  return variables_.back().get();
}

}  // namespace strata::nn
