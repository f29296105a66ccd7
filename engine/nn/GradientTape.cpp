#include "nn/GradientTape.h"

#include <unordered_set>

#include "backend/Backend.h"
#include "core/Error.h"
#include "nn/Variable.h"

namespace strata {

namespace {
thread_local GradientTape* t_active = nullptr;
}

GradientTape::GradientTape() : outer_(t_active) { t_active = this; }

GradientTape::~GradientTape() {
  if (recording_) t_active = outer_;
}

GradientTape* GradientTape::active() { return t_active; }

void GradientTape::record(std::vector<Tensor> inputs, const Tensor& output, Backward backward, UnitBackward unit) {
  Node node;
  node.inputs.reserve(inputs.size());
  for (auto& t : inputs) node.inputs.push_back(t.id());
  node.output = output.id();
  node.backward = std::move(backward);
  node.unit = std::move(unit);
  nodes_.push_back(std::move(node));
}

void record_op(std::vector<Tensor> inputs, const Tensor& output, GradientTape::Backward backward,
               GradientTape::UnitBackward unit) {
  if (auto* tape = GradientTape::active()) tape->record(std::move(inputs), output, std::move(backward), std::move(unit));
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable*>& sources,
                                           const Ready& ready) {
  std::vector<Tensor> values;
  values.reserve(sources.size());
  for (auto* v : sources) values.push_back(v->value());
  return gradient(target, values, ready);
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const Ready& ready) {
  if (recording_) {
    recording_ = false;
    t_active = outer_;
  }
  // Forward pass over the record: which tensors depend on a source. Only
  // those need a gradient, so e.g. the first layer never computes d input.
  std::unordered_set<uint64_t> depends;
  for (auto& s : sources) depends.insert(s.id());
  std::vector<char> live(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (auto in : nodes_[i].inputs)
      if (depends.count(in)) {
        live[i] = 1;
        depends.insert(nodes_[i].output);
        break;
      }
  }

  // A source's gradient is final once the backward pass has gone past the
  // first (in record order) op that read it.
  std::unordered_map<uint64_t, std::vector<size_t>> source_slots;
  if (ready)
    for (size_t s = 0; s < sources.size(); ++s) source_slots[sources[s].id()].push_back(s);
  std::unordered_map<uint64_t, size_t> first_reader;
  if (ready)
    for (size_t i = nodes_.size(); i-- > 0;)
      if (live[i])
        for (auto in : nodes_[i].inputs)
          if (source_slots.count(in)) first_reader[in] = i;
  std::vector<char> reported(sources.size(), 0);

  std::unordered_map<uint64_t, Tensor> grads;
  auto report_final = [&](size_t i) {
    if (!ready) return;
    for (auto in : nodes_[i].inputs) {
      auto reader = first_reader.find(in);
      if (reader == first_reader.end() || reader->second != i) continue;
      auto g = grads.find(in);
      if (g == grads.end()) continue;  // no path carried a gradient to it: zeros, reported at the end
      for (size_t s : source_slots[in])
        if (!reported[s]) {
          reported[s] = 1;
          ready(s, g->second);
        }
    }
  };
  // The target's gradient is all ones. The op that made it may say its
  // inputs' gradients for that itself (Node::unit); otherwise it is filled.
  size_t unit_node = nodes_.size();
  bool target_is_source = false;
  for (const Tensor& s : sources) target_is_source = target_is_source || s.id() == target.id();
  for (size_t i = nodes_.size(); !target_is_source && i-- > 0;)
    if (nodes_[i].output == target.id()) {
      if (live[i] && nodes_[i].unit) unit_node = i;
      break;
    }
  if (unit_node == nodes_.size()) grads[target.id()] = Tensor::full(target.shape(), 1.0f, target.device());
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (!live[i]) continue;
    std::vector<bool> needed;
    for (auto in : nodes_[i].inputs) needed.push_back(depends.count(in) > 0);
    std::vector<Tensor> in_grads;
    if (i == unit_node) {
      in_grads = nodes_[i].unit(needed);
    } else {
      auto it = grads.find(nodes_[i].output);
      if (it == grads.end()) {
        report_final(i);
        continue;
      }
      Tensor g = it->second;
      grads.erase(it);
      in_grads = nodes_[i].backward(g, needed);
    }
    for (size_t k = 0; k < nodes_[i].inputs.size() && k < in_grads.size(); ++k) {
      if (!needed[k] || !in_grads[k].defined()) continue;
      auto [slot, inserted] = grads.try_emplace(nodes_[i].inputs[k], in_grads[k]);
      if (!inserted) {
        // Fan-out: sum the contributions. Copy first so we never write into a
        // tensor an op may still hold.
        Tensor sum = slot->second.clone();
        backend_for(sum.device()).axpby(sum.numel(), 1.0f, in_grads[k].ptr(), 1.0f, sum.ptr());
        slot->second = sum;
      }
    }
    report_final(i);
  }
  nodes_.clear();

  std::vector<Tensor> out;
  out.reserve(sources.size());
  for (auto& s : sources) {
    auto it = grads.find(s.id());
    out.push_back(it != grads.end() ? it->second : Tensor::zeros(s.shape(), target.device()));
  }
  for (size_t s = 0; s < out.size(); ++s)
    if (ready && !reported[s]) ready(s, out[s]);
  return out;
}

}  // namespace strata
