#include "train/EventJson.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "core/JsonInteger.h"

namespace strata {

const char* event_type(const Event& e) {
  static const char* names[] = {"run_started", "step", "epoch", "device_stats", "log", "checkpoint", "finished"};
  return names[e.index()];
}

namespace {
// JSON has no NaN/Inf: a diverged loss is written as the string "nan"/"inf"
// so it survives the round trip and a reader sees the divergence.
Json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double read_number(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0.0;
  if (it->is_string()) {
    const auto s = it->get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw bad_input(std::string("event field '") + key + "': not a number: " + s);
  }
  if (!it->is_number()) throw bad_input(std::string("event field '") + key + "': not a number");
  return it->get<double>();
}

std::optional<double> read_optional(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return read_number(j, key);
}

template <typename T>
struct element {
  using type = T;
};
template <typename T>
struct element<std::vector<T>> {
  using type = T;
};

// Integer fields must hold whole numbers their type can represent (a
// fuzzer found 3e19 reaching an undefined cast). Arrays are checked element
// by element; a non-number is left to the library's type error, reported as
// bad input.
template <typename I>
void check_whole(const Json& v, const char* key) {
  if (v.is_array()) {
    for (const auto& x : v) check_whole<I>(x, key);
    return;
  }
  if (v.is_number() && !json_integer_fits<I>(v, true))
    throw bad_input(std::string("event field '") + key + "': " + v.dump() + " is not a whole number in range");
}

template <typename T>
T get_or(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_integral_v<typename element<T>::type> && !std::is_same_v<typename element<T>::type, bool>)
    check_whole<typename element<T>::type>(*it, key);
  return it->get<T>();
}

Json opt(const std::optional<double>& v) { return v ? number(*v) : Json(nullptr); }
}  // namespace

Json event_to_json(const Event& event) {
  Json j;
  j["type"] = event_type(event);
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RunStartedEvent>) {
          j["project"] = e.project;
          j["strategy"] = e.strategy;
          j["devices"] = e.devices;
          j["replicas"] = e.replicas;
          j["global_batch"] = e.global_batch;
          j["per_replica_batch"] = e.per_replica_batch;
          j["steps_per_epoch"] = e.steps_per_epoch;
          j["epochs"] = e.epochs;
          j["dataset"] = e.dataset;
          j["train_examples"] = e.train_examples;
          j["validation_examples"] = e.validation_examples;
          j["params"] = e.params;
          j["cross_device_ops"] = e.cross_device_ops;
          j["threads_per_replica"] = e.threads_per_replica;
          j["workers"] = e.workers;
          j["hosts"] = e.hosts;
          if (e.servers > 0) {
            j["servers"] = e.servers;
            j["staleness_bound"] = e.staleness_bound ? Json(*e.staleness_bound) : Json(nullptr);
            j["shards"] = e.shards;
          }
        } else if constexpr (std::is_same_v<T, StepEvent>) {
          j["step"] = e.step;
          j["epoch"] = e.epoch;
          j["epoch_step"] = e.epoch_step;
          j["time"] = e.time;
          Json losses = Json::array();
          for (double l : e.replica_losses) losses.push_back(number(l));
          j["replica_losses"] = losses;
          j["loss"] = number(e.loss);
          if (!std::isnan(e.accuracy)) j["accuracy"] = e.accuracy;
          j["lr"] = e.lr;
          j["samples_per_sec"] = e.samples_per_sec;
          j["worker_step_times"] = e.worker_step_times;
          if (!e.replica_step_times.empty()) j["replica_step_times"] = e.replica_step_times;
          if (e.staleness) {
            j["staleness"] = *e.staleness;
            j["worker_steps"] = e.worker_steps;
            j["lost_workers"] = e.lost_workers;
            j["server_updates_per_sec"] = e.server_updates_per_sec;
          }
        } else if constexpr (std::is_same_v<T, EpochEvent>) {
          j["epoch"] = e.epoch;
          j["loss"] = number(e.loss);
          j["accuracy"] = e.accuracy;
          j["val_loss"] = opt(e.val_loss);
          j["val_accuracy"] = opt(e.val_accuracy);
          j["time"] = e.time;
          j["samples_per_sec"] = e.samples_per_sec;
          j["lr"] = e.lr;
          j["best"] = e.best;
        } else if constexpr (std::is_same_v<T, DeviceStatsEvent>) {
          j["time"] = e.time;
          Json devs = Json::array();
          for (auto& d : e.devices) {
            Json dj{{"device", d.device}};
            dj["utilization"] = opt(d.utilization);
            dj["memory_used"] = d.memory_used ? Json(*d.memory_used) : Json(nullptr);
            dj["memory_total"] = d.memory_total ? Json(*d.memory_total) : Json(nullptr);
            devs.push_back(dj);
          }
          j["devices"] = devs;
        } else if constexpr (std::is_same_v<T, LogEvent>) {
          j["level"] = e.level;
          j["message"] = e.message;
          j["time"] = e.time;
        } else if constexpr (std::is_same_v<T, CheckpointEvent>) {
          j["path"] = e.path;
          j["step"] = e.step;
          j["epoch"] = e.epoch;
          j["time"] = e.time;
        } else if constexpr (std::is_same_v<T, FinishedEvent>) {
          j["status"] = status_name(e.status);
          if (e.status == RunStatus::Failed) j["failure"] = failure_name(e.failure);
          j["message"] = e.message;
          j["time"] = e.time;
          j["steps"] = e.steps;
          j["epochs_completed"] = e.epochs_completed;
          if (e.stopped_early) j["stopped_early"] = true;
        }
      },
      event);
  return j;
}

std::string event_to_jsonl(const Event& event) { return event_to_json(event).dump(); }

Event event_from_json(const Json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) throw bad_input("event: missing \"type\"");
  const std::string type = j["type"];
  try {
    if (type == "run_started") {
      RunStartedEvent e;
      e.project = get_or<std::string>(j, "project", "");
      e.strategy = get_or<std::string>(j, "strategy", "");
      e.devices = get_or<std::vector<std::string>>(j, "devices", {});
      e.replicas = get_or<int>(j, "replicas", 1);
      e.global_batch = get_or<int64_t>(j, "global_batch", 0);
      e.per_replica_batch = get_or<std::vector<int64_t>>(j, "per_replica_batch", {});
      e.steps_per_epoch = get_or<int64_t>(j, "steps_per_epoch", 0);
      e.epochs = get_or<int>(j, "epochs", 0);
      e.dataset = get_or<std::string>(j, "dataset", "");
      e.train_examples = get_or<int64_t>(j, "train_examples", 0);
      e.validation_examples = get_or<int64_t>(j, "validation_examples", 0);
      e.params = get_or<int64_t>(j, "params", 0);
      e.cross_device_ops = get_or<std::string>(j, "cross_device_ops", "");
      e.threads_per_replica = get_or<int>(j, "threads_per_replica", 1);
      e.workers = get_or<int>(j, "workers", 1);
      e.hosts = get_or<std::vector<std::string>>(j, "hosts", {});
      e.servers = get_or<int>(j, "servers", 0);
      if (j.contains("staleness_bound") && !j["staleness_bound"].is_null()) e.staleness_bound = get_or<int>(j, "staleness_bound", 0);
      e.shards = get_or<std::string>(j, "shards", "");
      return e;
    }
    if (type == "step") {
      StepEvent e;
      e.step = get_or<int64_t>(j, "step", 0);
      e.epoch = get_or<int>(j, "epoch", 0);
      e.epoch_step = get_or<int64_t>(j, "epoch_step", 0);
      e.time = read_number(j, "time");
      if (j.contains("replica_losses"))
        for (size_t i = 0; i < j["replica_losses"].size(); ++i) {
          Json wrap{{"v", j["replica_losses"][i]}};
          e.replica_losses.push_back(read_number(wrap, "v"));
        }
      e.loss = read_number(j, "loss");
      if (j.contains("accuracy")) e.accuracy = read_number(j, "accuracy");
      e.lr = read_number(j, "lr");
      e.samples_per_sec = read_number(j, "samples_per_sec");
      e.worker_step_times = get_or<std::vector<double>>(j, "worker_step_times", {});
      e.replica_step_times = get_or<std::vector<double>>(j, "replica_step_times", {});
      if (j.contains("staleness") && !j["staleness"].is_null()) e.staleness = get_or<int>(j, "staleness", 0);
      e.worker_steps = get_or<std::vector<int64_t>>(j, "worker_steps", {});
      e.lost_workers = get_or<std::vector<int>>(j, "lost_workers", {});
      e.server_updates_per_sec = get_or<std::vector<double>>(j, "server_updates_per_sec", {});
      return e;
    }
    if (type == "epoch") {
      EpochEvent e;
      e.epoch = get_or<int>(j, "epoch", 0);
      e.loss = read_number(j, "loss");
      e.accuracy = read_number(j, "accuracy");
      e.val_loss = read_optional(j, "val_loss");
      e.val_accuracy = read_optional(j, "val_accuracy");
      e.time = read_number(j, "time");
      e.samples_per_sec = read_number(j, "samples_per_sec");
      if (j.contains("lr")) e.lr = read_number(j, "lr");
      e.best = get_or<bool>(j, "best", false);
      return e;
    }
    if (type == "device_stats") {
      DeviceStatsEvent e;
      e.time = read_number(j, "time");
      if (j.contains("devices"))
        for (auto& d : j["devices"]) {
          DeviceStat s;
          s.device = get_or<std::string>(d, "device", "");
          s.utilization = read_optional(d, "utilization");
          if (d.contains("memory_used") && !d["memory_used"].is_null()) s.memory_used = get_or<int64_t>(d, "memory_used", 0);
          if (d.contains("memory_total") && !d["memory_total"].is_null()) s.memory_total = get_or<int64_t>(d, "memory_total", 0);
          e.devices.push_back(s);
        }
      return e;
    }
    if (type == "log") {
      LogEvent e;
      e.level = get_or<std::string>(j, "level", "info");
      e.message = get_or<std::string>(j, "message", "");
      e.time = read_number(j, "time");
      return e;
    }
    if (type == "checkpoint") {
      CheckpointEvent e;
      e.path = get_or<std::string>(j, "path", "");
      e.step = get_or<int64_t>(j, "step", 0);
      e.epoch = get_or<int>(j, "epoch", 0);
      e.time = read_number(j, "time");
      return e;
    }
    if (type == "finished") {
      FinishedEvent e;
      const std::string status = get_or<std::string>(j, "status", "completed");
      const auto known = status_from_name(status);
      if (!known) throw bad_input("event 'finished': status must be completed, stopped or failed, got '" + status + "'");
      e.status = *known;
      e.message = get_or<std::string>(j, "message", "");
      if (e.status == RunStatus::Failed) {
        const std::string failure = get_or<std::string>(j, "failure", "");
        if (auto kind = failure_from_name(failure)) {
          e.failure = *kind;
        } else if (!failure.empty()) {
          throw bad_input("event 'finished': unknown failure kind '" + failure + "'");
        } else {
          // Streams written before the failure kind existed: what their
          // messages said, the one place a message is read for it.
          const bool diverged = e.message.find("NaN") != std::string::npos || e.message.find("infinite") != std::string::npos;
          e.failure = diverged ? FailureKind::Diverged : FailureKind::Internal;
        }
      }
      e.time = read_number(j, "time");
      e.steps = get_or<int64_t>(j, "steps", 0);
      e.epochs_completed = get_or<int>(j, "epochs_completed", 0);
      e.stopped_early = get_or<bool>(j, "stopped_early", false);
      return e;
    }
  } catch (const nlohmann::json::exception& ex) {
    throw bad_input("event '" + type + "': " + ex.what());
  }
  throw bad_input("event: unknown type '" + type + "'");
}

Event event_from_jsonl(const std::string& line) {
  Json j;
  try {
    j = Json::parse(line);
  } catch (const nlohmann::json::exception& ex) {
    throw bad_input(std::string("event line is not JSON: ") + ex.what());
  }
  return event_from_json(j);
}

}  // namespace strata
