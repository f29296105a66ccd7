// strata-probe: runs one small model (a list of layer specs, as in a project)
// on given inputs and weights and prints what it computed, as JSON, so an
// independent implementation (tests/torch/, PyTorch in float64) can be
// compared with it: the output, the objective, the gradients with respect
// to the input and every trainable variable, the variables after K optimizer
// steps and the loss of each step.
//
//   strata-probe CASE.json   (reads the case, writes the result to stdout)
//
// A case: {"layers": [...], "example_shape": [...], "batch": N, "x": [...],
//          "training": true, "weights": {name: [...]} (optional),
//          "objective": {"kind": "cotangent", "r": [...]} or
//                       {"kind": "loss", "type": "sparse_categorical_crossentropy" |
//                        "categorical_crossentropy" | "mean_squared_error",
//                        "from_logits": bool, "reduction": "mean" | "sum",
//                        "labels": [...] | "targets": [...]},
//          "optimizer": {"type": "sgd" | "adam", ...OptimizerConfig, "steps": K} (optional),
//          "batches": [{"x": [...], "labels": [...]}, ...] (optional: the steps' batches, in turn)}
// With "describe": true it only builds the model and prints its variables.
// Not installed: a test tool.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/Device.h"
#include "core/Error.h"
#include "core/Rng.h"
#include "distribute/Strategies.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "train/ModelFactory.h"

using namespace strata;
using Json = nlohmann::json;

namespace {

std::vector<float> floats(const Json& j) { return j.get<std::vector<float>>(); }

Json values(const Tensor& t) {
  std::vector<float> v = t.values();
  return Json(std::vector<double>(v.begin(), v.end()));
}

Json variables(nn::Sequential& model) {
  Json out = Json::array();
  const auto trainable = model.trainable_variables();
  for (Variable* v : model.variables())
    out.push_back({{"name", v->name()},
                   {"shape", v->value().shape().dims()},
                   {"trainable", std::find(trainable.begin(), trainable.end(), v) != trainable.end()},
                   {"data", values(v->value())}});
  return out;
}

// sum(y * r), recorded: its gradient with respect to y is r. It is always
// the tape's target (upstream gradient 1), so r is returned as it is, on
// whatever device y lives.
Tensor contract(const Tensor& y, const Tensor& r) {
  const std::vector<float> yv = y.values(), rv = r.values();
  double s = 0;
  for (size_t i = 0; i < yv.size(); ++i) s += double(yv[i]) * rv[i];
  Tensor out = Tensor::scalar(static_cast<float>(s), y.device());
  record_op({y}, out, [r](const Tensor&, const std::vector<bool>&) { return std::vector<Tensor>{r.clone()}; });
  return out;
}

std::unique_ptr<nn::Loss> make_probe_loss(const Json& o) {
  const std::string type = o.at("type");
  const bool logits = o.value("from_logits", false);
  const nn::Reduction red = o.value("reduction", std::string("mean")) == "sum" ? nn::Reduction::Sum : nn::Reduction::Mean;
  if (type == "sparse_categorical_crossentropy") return std::make_unique<nn::SparseCategoricalCrossentropy>(logits, red);
  if (type == "categorical_crossentropy") return std::make_unique<nn::CategoricalCrossentropy>(logits, red);
  if (type == "mean_squared_error") return std::make_unique<nn::MeanSquaredError>(red);
  throw bad_input("objective.type: unknown loss '" + type + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 2) throw bad_input("usage: strata-probe CASE.json");
    std::ifstream in(argv[1]);
    if (!in) throw bad_input(std::string(argv[1]) + ": cannot open");
    const Json c = Json::parse(in);
    set_global_seed(c.value("seed", uint64_t{1}));
    RunConfig config;
    config.layers = c.at("layers").get<std::vector<Json>>();
    // "device": run on that device (a GPU, or sim:0) instead of the host:
    // the model is built in a OneDevice scope, so its variables live there.
    const Device device = Device::parse(c.value("device", std::string("cpu:0")));
    OneDeviceStrategy strategy(device);
    std::unique_ptr<nn::Sequential> model;
    const Shape example(c.at("example_shape").get<std::vector<int64_t>>());
    {
      auto scope = strategy.scope();
      model = make_model(config);
      model->build(example);
    }
    Json out;
    if (c.value("describe", false)) {
      out["variables"] = variables(*model);
      std::cout << out.dump() << "\n";
      return 0;
    }
    if (c.contains("weights"))
      for (Variable* v : model->variables())
        if (c["weights"].contains(v->name()))
          v->assign(Tensor::from(v->value().shape(), floats(c["weights"][v->name()]), v->value().device()));
    out["variables"] = variables(*model);

    std::vector<int64_t> xdims{c.at("batch").get<int64_t>()};
    for (int64_t d : example.dims()) xdims.push_back(d);
    Tensor x = Tensor::from(Shape(xdims), floats(c.at("x")), device);
    const bool training = c.value("training", true);
    const Json& o = c.at("objective");
    std::unique_ptr<nn::Loss> loss;
    Tensor targets;
    if (o.at("kind") == "loss") {
      loss = make_probe_loss(o);
      if (o.contains("labels")) {
        const auto labels = o["labels"].get<std::vector<int32_t>>();
        targets = Tensor::from_ints(Shape{static_cast<int64_t>(labels.size())}, labels, device);
      }
    }
    // One forward and backward pass; returns the objective.
    auto pass = [&](bool record_outputs) {
      GradientTape tape;
      Tensor y = (*model)(x, training, tape);
      if (loss && o.contains("targets")) targets = Tensor::from(y.shape(), floats(o["targets"]), device);
      Tensor objective = loss ? (*loss)(targets, y) : contract(y, Tensor::from(y.shape(), floats(o.at("r")), device));
      std::vector<Tensor> sources{x};
      const auto vars = model->trainable_variables();
      for (Variable* v : vars) sources.push_back(v->value());
      const auto grads = tape.gradient(objective, sources);
      if (record_outputs) {
        out["y"] = {{"shape", y.shape().dims()}, {"data", values(y)}};
        out["objective"] = objective.values().front();
        out["dx"] = values(grads[0]);
        Json g = Json::object();
        for (size_t i = 0; i < vars.size(); ++i) g[vars[i]->name()] = values(grads[i + 1]);
        out["grads"] = g;
      }
      return std::pair{objective.values().front(), std::vector<Tensor>(grads.begin() + 1, grads.end())};
    };
    pass(true);
    // Variables a training pass changes (batch norm's moving statistics).
    Json state = Json::object();
    for (Variable* v : model->variables()) state[v->name()] = values(v->value());
    out["state"] = state;
    if (c.contains("optimizer")) {
      const Json& oc = c["optimizer"];
      OptimizerConfig opt;
      opt.type = oc.at("type");
      opt.learning_rate = oc.value("learning_rate", opt.learning_rate);
      opt.momentum = oc.value("momentum", opt.momentum);
      opt.nesterov = oc.value("nesterov", opt.nesterov);
      opt.beta_1 = oc.value("beta_1", opt.beta_1);
      opt.beta_2 = oc.value("beta_2", opt.beta_2);
      opt.epsilon = oc.value("epsilon", opt.epsilon);
      auto optimizer = make_optimizer(opt);
      Json losses = Json::array();
      // Optional other batches for the steps, taken in turn: {"x": [...], "labels": [...]}.
      const Json batches = c.value("batches", Json::array());
      for (int s = 0; s < oc.value("steps", 1); ++s) {
        if (!batches.empty()) {
          const Json& b = batches[static_cast<size_t>(s) % batches.size()];
          x = Tensor::from(Shape(xdims), floats(b.at("x")), device);
          const auto labels = b.at("labels").get<std::vector<int32_t>>();
          targets = Tensor::from_ints(Shape{static_cast<int64_t>(labels.size())}, labels, device);
        }
        auto [value, grads] = pass(false);
        losses.push_back(value);
        optimizer->apply_gradients(grads, model->trainable_variables());
      }
      out["losses"] = losses;
      Json after = Json::object();
      for (Variable* v : model->variables()) after[v->name()] = values(v->value());
      out["after"] = after;
    }
    std::cout << out.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-probe: %s\n", e.what());
    return 2;
  }
}
