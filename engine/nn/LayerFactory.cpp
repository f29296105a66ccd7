#include "nn/LayerFactory.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/ActivationLayer.h"
#include "nn/Dense.h"
#include "nn/Dropout.h"
#include "nn/Flatten.h"

namespace strata::nn {

namespace {
std::string describe(const Json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

// Reads optional fields with type checks, collecting problems.
struct Reader {
  const Json& spec;
  const std::string& path;
  std::vector<std::string>& problems;

  int64_t positive_int(const char* key, bool required, int64_t fallback) {
    if (!spec.contains(key)) {
      if (required) problems.push_back(path + "." + key + ": required");
      return fallback;
    }
    const Json& v = spec[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
      problems.push_back(path + "." + key + ": must be a positive integer, got " + describe(v));
      return fallback;
    }
    return v.get<int64_t>();
  }
  Activation activation(const char* key) {
    if (!spec.contains(key)) return Activation::None;
    Activation a = Activation::None;
    if (!spec[key].is_string() || !parse_activation(spec[key].get<std::string>(), a))
      problems.push_back(path + "." + key + ": must be one of linear, relu, tanh, sigmoid, softmax; got " + describe(spec[key]));
    return a;
  }
  bool boolean(const char* key, bool fallback) {
    if (!spec.contains(key)) return fallback;
    if (!spec[key].is_boolean()) {
      problems.push_back(path + "." + key + ": must be true or false, got " + describe(spec[key]));
      return fallback;
    }
    return spec[key].get<bool>();
  }
  double number(const char* key, double lo, double hi, double fallback) {
    if (!spec.contains(key)) return fallback;
    const Json& v = spec[key];
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() >= hi) {
      problems.push_back(path + "." + key + ": must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "), got " + describe(v));
      return fallback;
    }
    return v.get<double>();
  }
  void only(std::initializer_list<const char*> keys) {
    for (auto& [k, v] : spec.items()) {
      bool known = k == "type";
      for (auto* key : keys) known = known || k == key;
      if (!known) problems.push_back(path + "." + k + ": unknown field for a " + spec["type"].get<std::string>() + " layer");
    }
  }
};

LayerPtr build(const Json& spec, const std::string& path, std::vector<std::string>& problems) {
  if (!spec.is_object()) {
    problems.push_back(path + ": must be an object with a \"type\", got " + describe(spec));
    return nullptr;
  }
  if (!spec.contains("type") || !spec["type"].is_string()) {
    problems.push_back(path + ".type: required (one of dense, flatten, dropout, relu, tanh, sigmoid, softmax)");
    return nullptr;
  }
  const std::string type = spec["type"];
  Reader r{spec, path, problems};
  const size_t before = problems.size();
  LayerPtr layer;
  if (type == "dense") {
    r.only({"units", "activation", "use_bias"});
    const int64_t units = r.positive_int("units", true, 1);
    const Activation act = r.activation("activation");
    const bool bias = r.boolean("use_bias", true);
    if (problems.size() == before) layer = Dense(units, act, bias);
  } else if (type == "flatten") {
    r.only({});
    layer = Flatten();
  } else if (type == "dropout") {
    r.only({"rate"});
    const double rate = r.number("rate", 0.0, 1.0, 0.5);
    if (!spec.contains("rate")) problems.push_back(path + ".rate: required");
    if (problems.size() == before) layer = Dropout(static_cast<float>(rate));
  } else if (type == "relu" || type == "tanh" || type == "sigmoid" || type == "softmax") {
    r.only({});
    Activation a;
    parse_activation(type, a);
    layer = std::make_shared<ActivationLayer>(a);
  } else {
    std::string all;
    for (auto& t : layer_types()) all += (all.empty() ? "" : ", ") + t;
    problems.push_back(path + ".type: unknown layer '" + type + "' (known: " + all + ")");
  }
  return problems.size() == before ? layer : nullptr;
}
}  // namespace

std::vector<std::string> layer_types() { return {"dense", "flatten", "dropout", "relu", "tanh", "sigmoid", "softmax"}; }

std::vector<std::string> check_layer(const Json& spec, const std::string& path) {
  std::vector<std::string> problems;
  build(spec, path, problems);
  return problems;
}

LayerPtr make_layer(const Json& spec, const std::string& path) {
  std::vector<std::string> problems;
  LayerPtr l = build(spec, path, problems);
  if (!problems.empty()) throw bad_input(problems.front());
  return l;
}

}  // namespace strata::nn
