#include "nn/LayerFactory.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/ActivationLayer.h"
#include "nn/BatchNormalization.h"
#include "nn/Conv2D.h"
#include "nn/Pool2D.h"
#include "nn/Reshape.h"
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
  // An integer or a pair [h, w] (Keras' kernel_size, strides, pool_size).
  std::pair<int64_t, int64_t> pair(const char* key, bool required, int64_t fallback) {
    if (!spec.contains(key)) {
      if (required) problems.push_back(path + "." + key + ": required");
      return {fallback, fallback};
    }
    const Json& v = spec[key];
    if (v.is_number_integer() && v.get<int64_t>() > 0) return {v.get<int64_t>(), v.get<int64_t>()};
    if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer() && v[0].get<int64_t>() > 0 &&
        v[1].get<int64_t>() > 0)
      return {v[0].get<int64_t>(), v[1].get<int64_t>()};
    problems.push_back(path + "." + key + ": must be a positive integer or a pair [height, width], got " + describe(v));
    return {fallback, fallback};
  }
  Padding padding() {
    Padding p = Padding::Valid;
    if (spec.contains("padding") && (!spec["padding"].is_string() || !parse_padding(spec["padding"].get<std::string>(), p)))
      problems.push_back(path + ".padding: must be \"valid\" or \"same\", got " + describe(spec["padding"]));
    return p;
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
    problems.push_back(path + ".type: required (a layer type such as dense, conv2d, flatten)");
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
  } else if (type == "conv2d") {
    r.only({"filters", "kernel_size", "strides", "padding", "activation", "use_bias"});
    const int64_t filters = r.positive_int("filters", true, 1);
    auto [kh, kw] = r.pair("kernel_size", true, 1);
    auto [sh, sw] = r.pair("strides", false, 1);
    const Padding pad = r.padding();
    const Activation act = r.activation("activation");
    const bool bias = r.boolean("use_bias", true);
    if (act == Activation::Softmax) problems.push_back(path + ".activation: softmax is not supported on conv2d");
    if (problems.size() == before) layer = std::make_shared<Conv2DLayer>(filters, kh, kw, sh, sw, pad, act, bias);
  } else if (type == "max_pool2d" || type == "average_pool2d") {
    r.only({"pool_size", "strides", "padding"});
    auto [ph, pw] = r.pair("pool_size", false, 2);
    auto [sh, sw] = r.pair("strides", false, 0);
    if (sh == 0) {
      sh = ph;
      sw = pw;
    }
    const Padding pad = r.padding();
    const auto kind = type == "max_pool2d" ? Pool2DLayer::Kind::Max : Pool2DLayer::Kind::Average;
    if (problems.size() == before) layer = std::make_shared<Pool2DLayer>(kind, ph, pw, sh, sw, pad);
  } else if (type == "global_average_pooling2d") {
    r.only({});
    layer = GlobalAveragePooling2D();
  } else if (type == "batch_normalization") {
    r.only({"momentum", "epsilon", "center", "scale", "synchronized"});
    const double momentum = r.number("momentum", 0.0, 1.0, 0.99);
    const double epsilon = r.number("epsilon", 1e-12, 1.0, 1e-3);
    const bool center = r.boolean("center", true), scale = r.boolean("scale", true), sync = r.boolean("synchronized", false);
    if (problems.size() == before)
      layer = std::make_shared<BatchNormalizationLayer>(static_cast<float>(momentum), static_cast<float>(epsilon), center,
                                                        scale, sync);
  } else if (type == "reshape") {
    r.only({"target_shape"});
    std::vector<int64_t> target;
    const Json* t = spec.contains("target_shape") ? &spec["target_shape"] : nullptr;
    bool ok = t && t->is_array() && !t->empty();
    if (ok)
      for (auto& d : *t) {
        ok = ok && d.is_number_integer() && (d.get<int64_t>() > 0 || d.get<int64_t>() == -1);
        if (ok) target.push_back(d.get<int64_t>());
      }
    if (!ok) problems.push_back(path + ".target_shape: must be an array of positive integers (one may be -1)");
    if (problems.size() == before) layer = Reshape(target);
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

std::vector<std::string> layer_types() {
  return {"dense",  "conv2d",  "max_pool2d", "average_pool2d", "global_average_pooling2d", "batch_normalization",
          "flatten", "reshape", "dropout",    "relu",           "tanh",                     "sigmoid",
          "softmax"};
}

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
