#include "project/ProjectFile.h"

#include "core/JsonInteger.h"
#include "core/ShortestDecimal.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <zlib.h>
#include <set>
#include <sstream>

#include "core/Device.h"
#include "core/Error.h"
#include "nn/LayerFactory.h"
#include "train/LearningRateSchedule.h"
#include "train/TrainingCallbacks.h"

namespace strata {

namespace fs = std::filesystem;

namespace {
std::string describe(const Json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

// Field reader that records "path: reason" for every problem and keeps going,
// so one load reports everything that is wrong.
class Fields {
public:
  Fields(const Json& obj, std::string path, std::vector<std::string>& problems)
      : obj_(obj), path_(std::move(path)), problems_(problems) {
    if (!obj_.is_object()) problems_.push_back(path_ + ": must be an object, got " + describe(obj_));
  }

  bool has(const char* key) const { return obj_.is_object() && obj_.contains(key); }
  std::string at(const char* key) const { return path_ + "." + key; }

  template <typename T>
  void read(const char* key, T& out) {
    seen_.insert(key);
    if (!has(key)) return;
    const Json& v = obj_[key];
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) return fail(key, "must be true or false", v);
      out = v.get<bool>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) return fail(key, "must be a string", v);
      out = v.get<std::string>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) return fail(key, "must be an integer", v);
      // Range-checked before narrowing: 4294967297 must not become 1.
      if (!json_integer_fits<T>(v, false)) return fail(key, "is out of range", v);
      out = v.get<T>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) return fail(key, "must be a number", v);
      out = v.get<T>();
    }
  }
  template <typename T>
  void positive(const char* key, T& out) {
    const T before = out;
    read(key, out);
    if (has(key) && obj_[key].is_number() && !(out > 0)) {
      fail(key, "must be a positive " + std::string(std::is_integral_v<T> ? "integer" : "number"), obj_[key]);
      out = before;
    }
  }
  template <typename T>
  void range(const char* key, T& out, double lo, double hi, const char* text) {
    read(key, out);
    if (has(key) && obj_[key].is_number() && (static_cast<double>(out) < lo || static_cast<double>(out) > hi))
      fail(key, text, obj_[key]);
  }
  void one_of(const char* key, std::string& out, std::initializer_list<const char*> options) {
    read(key, out);
    if (!has(key) || !obj_[key].is_string()) return;
    std::string all;
    for (auto* o : options) {
      if (out == o) return;
      all += (all.empty() ? "" : ", ") + std::string(o);
    }
    fail(key, "must be one of " + all, obj_[key]);
  }
  const Json* object(const char* key) {
    seen_.insert(key);
    return has(key) ? &obj_[key] : nullptr;
  }
  // Unknown keys are typos more often than extensions: report them.
  void reject_unknown() {
    if (!obj_.is_object()) return;
    for (auto& [k, v] : obj_.items())
      if (!seen_.count(k)) problems_.push_back(path_ + "." + k + ": unknown field");
  }
  void fail(const char* key, const std::string& reason, const Json& v) {
    problems_.push_back(at(key) + ": " + reason + ", got " + describe(v));
  }

private:
  const Json& obj_;
  std::string path_;
  std::vector<std::string>& problems_;
  std::set<std::string> seen_;
};

RunConfig parse(const Json& j, const std::string& base_dir, std::vector<std::string>& problems) {
  RunConfig c;
  c.base_dir = base_dir;
  if (!j.is_object()) {
    problems.push_back("(root): a project must be a JSON object");
    return c;
  }
  Fields root(j, "", problems);
  std::string format;
  root.read("format", format);
  if (format != kProjectFormat) {
    problems.push_back(std::string("format: must be \"") + kProjectFormat + "\" (is this a Strata project?)");
    return c;
  }
  int version = 0;
  root.read("version", version);
  if (version > kProjectVersion) {
    // Refuse whole: reading part of a newer file and saving it would lose data.
    problems.push_back("version: this project was written by a newer Strata (format version " + std::to_string(version) +
                       "; this Strata reads up to " + std::to_string(kProjectVersion) + ")");
    return c;
  }
  if (version < 1) problems.push_back("version: must be a positive integer");
  root.read("name", c.name);

  if (const Json* d = root.object("dataset")) {
    Fields f(*d, "dataset", problems);
    auto& ds = c.dataset;
    f.one_of("kind", ds.kind, {"fashion_mnist", "idx", "csv", "synthetic"});
    f.read("path", ds.path);
    f.read("train_images", ds.train_images);
    f.read("train_labels", ds.train_labels);
    f.read("test_images", ds.test_images);
    f.read("test_labels", ds.test_labels);
    f.read("train_csv", ds.train_csv);
    f.read("test_csv", ds.test_csv);
    f.read("label_column", ds.label_column);
    f.one_of("header", ds.header, {"auto", "yes", "no"});
    f.positive("synthetic_examples", ds.synthetic_examples);
    f.positive("synthetic_features", ds.synthetic_features);
    f.range("synthetic_classes", ds.synthetic_classes, 2, 1e6, "must be an integer >= 2");
    f.range("validation_split", ds.validation_split, 0.0, 0.95, "must be a number in [0, 0.95]");
    f.read("standardize", ds.standardize);
    f.reject_unknown();
    if (ds.kind == "idx" && (ds.train_images.empty() || ds.train_labels.empty()))
      problems.push_back("dataset.train_images: an idx dataset needs train_images and train_labels");
    if (ds.kind == "idx" && ds.test_images.empty() != ds.test_labels.empty())
      problems.push_back("dataset.test_images: give both test_images and test_labels, or neither");
    if (ds.kind == "csv" && ds.train_csv.empty()) problems.push_back("dataset.train_csv: a csv dataset needs train_csv");
  } else {
    problems.push_back("dataset: required");
  }

  if (const Json* m = root.object("model")) {
    Fields f(*m, "model", problems);
    if (const Json* layers = f.object("layers")) {
      if (!layers->is_array() || layers->empty()) {
        problems.push_back("model.layers: must be a non-empty array of layers");
      } else {
        for (size_t i = 0; i < layers->size(); ++i) {
          auto p = nn::check_layer((*layers)[i], "model.layers[" + std::to_string(i) + "]");
          problems.insert(problems.end(), p.begin(), p.end());
          c.layers.push_back((*layers)[i]);
        }
      }
    } else {
      problems.push_back("model.layers: required");
    }
    f.reject_unknown();
  } else {
    problems.push_back("model: required");
  }

  if (const Json* t = root.object("training")) {
    Fields f(*t, "training", problems);
    auto& tc = c.training;
    f.positive("epochs", tc.epochs);
    f.positive("batch_size", tc.batch_size);
    f.one_of("loss", tc.loss, {"sparse_categorical_crossentropy"});
    f.read("from_logits", tc.from_logits);
    f.read("seed", tc.seed);
    f.read("shuffle", tc.shuffle);
    f.read("drop_remainder", tc.drop_remainder);
    f.range("threads", tc.threads, 0, 1024, "must be an integer in [0, 1024] (0 = every core)");
    f.range("prefetch", tc.prefetch, 0, 64, "must be an integer in [0, 64]");
    f.range("max_steps_per_epoch", tc.max_steps_per_epoch, 0, 1e12, "must be a non-negative integer");
    if (const Json* o = f.object("optimizer")) {
      Fields of(*o, "training.optimizer", problems);
      auto& oc = tc.optimizer;
      of.one_of("type", oc.type, {"adam", "sgd"});
      of.positive("learning_rate", oc.learning_rate);
      of.range("momentum", oc.momentum, 0.0, 0.999999, "must be a number in [0, 1)");
      of.read("nesterov", oc.nesterov);
      of.range("beta_1", oc.beta_1, 0.0, 0.999999, "must be a number in [0, 1)");
      of.range("beta_2", oc.beta_2, 0.0, 0.999999, "must be a number in [0, 1)");
      of.positive("epsilon", oc.epsilon);
      of.reject_unknown();
    }
    if (const Json* k = f.object("checkpoint")) {
      Fields kf(*k, "training.checkpoint", problems);
      auto& kc = tc.checkpoint;
      kf.range("every_steps", kc.every_steps, 0, 1e12, "must be a non-negative integer (0 = not by steps)");
      kf.read("every_epoch", kc.every_epoch);
      kf.range("keep", kc.keep, 1, 1e6, "must be a positive integer");
      kf.read("keep_best", kc.keep_best);
      kf.reject_unknown();
    }
    if (const Json* l = f.object("lr_schedule")) {
      Fields lf(*l, "training.lr_schedule", problems);
      auto& lc = tc.lr_schedule;
      lf.read("type", lc.type);
      lf.read("warmup_epochs", lc.warmup_epochs);
      lf.read("every_epochs", lc.every_epochs);
      lf.read("factor", lc.factor);
      lf.read("decay_rate", lc.decay_rate);
      lf.read("min_lr", lc.min_lr);
      lf.reject_unknown();
      for (auto& p : check_lr_schedule(lc, tc.optimizer.learning_rate, "training.lr_schedule")) problems.push_back(p);
    }
    if (const Json* e = f.object("early_stopping")) {
      Fields ef(*e, "training.early_stopping", problems);
      auto& ec = tc.early_stopping;
      ef.read("enabled", ec.enabled);
      ef.read("monitor", ec.monitor);
      ef.read("patience", ec.patience);
      ef.read("min_delta", ec.min_delta);
      ef.reject_unknown();
    }
    if (const Json* r = f.object("reduce_lr_on_plateau")) {
      Fields rf(*r, "training.reduce_lr_on_plateau", problems);
      auto& rc = tc.reduce_lr_on_plateau;
      rf.read("enabled", rc.enabled);
      rf.read("monitor", rc.monitor);
      rf.read("factor", rc.factor);
      rf.read("patience", rc.patience);
      rf.read("min_delta", rc.min_delta);
      rf.read("cooldown", rc.cooldown);
      rf.read("min_lr", rc.min_lr);
      rf.reject_unknown();
    }
    // Whether a val_* monitor has validation data is known once the data is
    // loaded (Trainer::prepare); the rest is checked here.
    for (auto& p : check_callbacks(tc, true)) problems.push_back(p);
    f.reject_unknown();
  } else {
    problems.push_back("training: required");
  }

  if (const Json* s = root.object("strategy")) {
    Fields f(*s, "strategy", problems);
    auto& sc = c.strategy;
    f.one_of("name", sc.name, {"one_device", "mirrored", "central_storage", "multi_worker_mirrored", "parameter_server"});
    if (const Json* d = f.object("devices")) {
      if (!d->is_array()) {
        problems.push_back("strategy.devices: must be an array of device names like \"cpu:0\"");
      } else {
        for (size_t i = 0; i < d->size(); ++i) {
          const Json& dev = (*d)[i];
          const std::string path = "strategy.devices[" + std::to_string(i) + "]";
          if (!dev.is_string()) {
            problems.push_back(path + ": must be a string like \"cpu:0\", got " + describe(dev));
            continue;
          }
          try {
            Device::parse(dev.get<std::string>());
          } catch (const Error& e) {
            problems.push_back(path + ": " + e.what());
          }
          sc.devices.push_back(dev.get<std::string>());
        }
      }
    }
    f.read("cross_device_ops", sc.cross_device_ops);
    f.positive("fusion_bytes", sc.fusion_bytes);
    f.one_of("sharded_update", sc.sharded_update, {"auto", "on", "off"});
    f.positive("collective_timeout", sc.collective_timeout);
    f.positive("servers", sc.servers);
    // null (or absent) = unbounded, i.e. fully asynchronous.
    if (const Json* k = f.object("staleness"); k && !k->is_null()) {
      if (!k->is_number_integer() || k->get<int64_t>() < 0 || k->get<int64_t>() > 1000000)
        f.fail("staleness", "must be 0 (synchronous) or a positive bound on how many steps a worker may run ahead, or null "
                            "for unbounded", *k);
      else
        sc.staleness = static_cast<int>(k->get<int64_t>());
    }
    f.range("min_shard_bytes", sc.min_shard_bytes, 0, 1e15, "must be 0 (whole variables) or a positive number of bytes");
    f.reject_unknown();
  }
  root.reject_unknown();
  return c;
}
}  // namespace

std::vector<std::string> validate_project(const Json& j) {
  std::vector<std::string> problems;
  parse(j, {}, problems);
  return problems;
}

RunConfig project_from_json(const Json& j, const std::string& base_dir) {
  std::vector<std::string> problems;
  RunConfig c = parse(j, base_dir, problems);
  if (!problems.empty()) {
    std::string msg;
    for (auto& p : problems) msg += (msg.empty() ? "" : "\n") + p;
    throw bad_input(msg);
  }
  return c;
}

Json project_to_json(const RunConfig& c) {
  Json j;
  j["format"] = kProjectFormat;
  j["version"] = kProjectVersion;
  j["name"] = c.name;
  const auto& d = c.dataset;
  Json ds{{"kind", d.kind}, {"validation_split", d.validation_split}, {"standardize", d.standardize}};
  if (d.kind == "fashion_mnist" && !d.path.empty()) ds["path"] = d.path;
  if (d.kind == "idx") {
    ds["train_images"] = d.train_images;
    ds["train_labels"] = d.train_labels;
    ds["test_images"] = d.test_images;
    ds["test_labels"] = d.test_labels;
  }
  if (d.kind == "csv") {
    ds["train_csv"] = d.train_csv;
    ds["test_csv"] = d.test_csv;
    ds["label_column"] = d.label_column;
    ds["header"] = d.header;
  }
  if (d.kind == "synthetic") {
    ds["synthetic_examples"] = d.synthetic_examples;
    ds["synthetic_features"] = d.synthetic_features;
    ds["synthetic_classes"] = d.synthetic_classes;
  }
  j["dataset"] = ds;
  j["model"] = Json{{"layers", c.layers}};
  const auto& t = c.training;
  const auto& o = t.optimizer;
  // Floats as the decimals they were written as, without widening noise.
  Json opt{{"type", o.type}, {"learning_rate", shortest_decimal(o.learning_rate)}};
  if (o.type == "sgd") {
    opt["momentum"] = shortest_decimal(o.momentum);
    opt["nesterov"] = o.nesterov;
  } else {
    opt["beta_1"] = shortest_decimal(o.beta_1);
    opt["beta_2"] = shortest_decimal(o.beta_2);
    opt["epsilon"] = shortest_decimal(o.epsilon);
  }
  j["training"] = Json{{"epochs", t.epochs},
                       {"batch_size", t.batch_size},
                       {"optimizer", opt},
                       {"loss", t.loss},
                       {"from_logits", t.from_logits},
                       {"seed", t.seed},
                       {"shuffle", t.shuffle},
                       {"drop_remainder", t.drop_remainder},
                       {"threads", t.threads},
                       {"prefetch", t.prefetch},
                       {"max_steps_per_epoch", t.max_steps_per_epoch},
                       {"checkpoint",
                        {{"every_steps", t.checkpoint.every_steps},
                         {"every_epoch", t.checkpoint.every_epoch},
                         {"keep", t.checkpoint.keep},
                         {"keep_best", t.checkpoint.keep_best}}}};
  // Schedules and callbacks are written only when used, so projects that do
  // not use them read as they always did.
  const LrScheduleConfig& ls = t.lr_schedule;
  if (!is_constant(ls)) {
    Json l{{"type", ls.type}, {"warmup_epochs", ls.warmup_epochs}};
    if (ls.type == "step") {
      l["every_epochs"] = ls.every_epochs;
      l["factor"] = ls.factor;
    } else if (ls.type == "exponential") {
      l["decay_rate"] = ls.decay_rate;
    } else if (ls.type == "cosine") {
      l["min_lr"] = ls.min_lr;
    }
    j["training"]["lr_schedule"] = l;
  }
  if (t.early_stopping.enabled) {
    const EarlyStoppingConfig& e = t.early_stopping;
    j["training"]["early_stopping"] =
        Json{{"enabled", true}, {"monitor", e.monitor}, {"patience", e.patience}, {"min_delta", e.min_delta}};
  }
  if (t.reduce_lr_on_plateau.enabled) {
    const ReduceLrOnPlateauConfig& r = t.reduce_lr_on_plateau;
    j["training"]["reduce_lr_on_plateau"] = Json{{"enabled", true},     {"monitor", r.monitor},   {"factor", r.factor},
                                                 {"patience", r.patience}, {"min_delta", r.min_delta}, {"cooldown", r.cooldown},
                                                 {"min_lr", r.min_lr}};
  }
  j["strategy"] = Json{{"name", c.strategy.name},
                       {"devices", c.strategy.devices},
                       {"cross_device_ops", c.strategy.cross_device_ops},
                       {"fusion_bytes", c.strategy.fusion_bytes},
                       {"sharded_update", c.strategy.sharded_update},
                       {"collective_timeout", c.strategy.collective_timeout}};
  if (c.strategy.name == "parameter_server") {
    j["strategy"]["servers"] = c.strategy.servers;
    j["strategy"]["staleness"] = c.strategy.staleness >= 0 ? Json(c.strategy.staleness) : Json(nullptr);
    j["strategy"]["min_shard_bytes"] = c.strategy.min_shard_bytes;
  }
  return j;
}

std::vector<std::pair<std::string, uint32_t>> agreement_digest(const RunConfig& config) {
  Json j = project_to_json(config);
  j["training"].erase("threads");
  j["training"].erase("prefetch");
  j["training"].erase("checkpoint");
  j["strategy"]["replicas"] = config.strategy.devices.size();
  j["strategy"].erase("devices");
  std::vector<std::pair<std::string, uint32_t>> out;
  for (const char* part : {"model", "dataset", "training", "strategy"}) {
    const std::string text = j[part].dump();
    out.emplace_back(part, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(text.data()),
                                                       static_cast<uInt>(text.size()))));
  }
  return out;
}

RunConfig load_project(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open project file (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  Json j;
  try {
    j = Json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    // Syntax errors, and numbers out of range (1e400) which the parser
    // reports as out_of_range rather than parse_error.
    // Without the library's "[json.exception.parse_error.101] " tag.
    std::string why = e.what();
    if (why.starts_with("[json.exception.")) why.erase(0, why.find("] ") + 2);
    throw bad_input(path + ": not a Strata project: not valid JSON (" + why + ")");
  }
  try {
    return project_from_json(j, fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw bad_input(path + ":\n" + e.what());
  }
}

void save_project(const RunConfig& config, const std::string& path) {
  write_file_atomically(path, project_to_json(config).dump(2) + "\n");
}

}  // namespace strata
