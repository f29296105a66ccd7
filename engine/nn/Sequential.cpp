#include "nn/Sequential.h"

#include <map>

#include "core/Error.h"

namespace strata::nn {

Sequential::Sequential(std::initializer_list<LayerPtr> layers) {
  for (auto& l : layers) add(l);
}

Sequential::Sequential(std::vector<LayerPtr> layers) {
  for (auto& l : layers) add(std::move(l));
}

void Sequential::add(LayerPtr layer) {
  // Keras naming: dense, dense_1, dense_2, ...
  std::map<std::string, int> seen;
  for (auto& l : layers_) seen[l->type()]++;
  const int n = seen[layer->type()];
  layer->set_name(n == 0 ? layer->type() : layer->type() + "_" + std::to_string(n));
  layers_.push_back(std::move(layer));
}

std::vector<LayerSummary> Sequential::summary(const Shape& input_shape) const {
  std::vector<LayerSummary> out;
  Shape s = input_shape;
  for (size_t i = 0; i < layers_.size(); ++i) {
    try {
      s = layers_[i]->output_shape(s);
    } catch (const Error& e) {
      throw bad_input("model.layers[" + std::to_string(i) + "] (" + layers_[i]->type() + "): " + e.what());
    }
    out.push_back({layers_[i]->name(), layers_[i]->type(), s, layers_[i]->built() ? layers_[i]->param_count() : 0});
  }
  return out;
}

void Sequential::build(const Shape& input_shape) {
  std::lock_guard lock(build_->mutex);
  if (build_->built.load(std::memory_order_relaxed)) {
    if (input_shape != input_shape_)
      throw bad_input("model was built for input " + input_shape_.str() + ", called with " + input_shape.str());
    return;
  }
  summary(input_shape);  // validates every layer's shape before creating anything
  Shape s = input_shape;
  for (auto& l : layers_) {
    l->build(s);
    s = l->output_shape(s);
  }
  input_shape_ = input_shape;
  build_->built.store(true, std::memory_order_release);
}

Tensor Sequential::operator()(const Tensor& x, bool training) {
  if (x.shape().rank() < 1) throw bad_input("model input must have a batch dimension, got " + x.shape().str());
  if (!built()) build(Shape(std::vector<int64_t>(x.shape().dims().begin() + 1, x.shape().dims().end())));
  Tensor h = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (i + 1 < layers_.size())
      if (auto both = layers_[i]->call_with_next(*layers_[i + 1], h, training)) {
        h = std::move(*both);
        ++i;
        continue;
      }
    h = layers_[i]->call(h, training);
  }
  return h;
}

Tensor Sequential::operator()(const Tensor& x, bool training, GradientTape&) { return (*this)(x, training); }

std::vector<Variable*> Sequential::trainable_variables() {
  std::vector<Variable*> out;
  for (auto& l : layers_)
    for (auto* v : l->trainable_variables()) out.push_back(v);
  return out;
}

std::vector<Variable*> Sequential::variables() {
  std::vector<Variable*> out = trainable_variables();
  for (auto& l : layers_)
    for (auto* v : l->non_trainable_variables()) out.push_back(v);
  return out;
}

int64_t Sequential::param_count() const {
  int64_t n = 0;
  for (auto& l : layers_) n += l->param_count();
  return n;
}

}  // namespace strata::nn
