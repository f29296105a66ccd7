#include "train/EventJson.h"

#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <variant>

#include "core/Error.h"
#include "core/JsonInteger.h"

namespace strata {

const char* event_type(const Event& e) {
  static const char* names[] = {"run_started", "step",       "epoch",    "device_stats",
                                "log",         "checkpoint", "finished", "step_spans"};
  static_assert(std::size(names) == std::variant_size_v<Event>);
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

// A number as written by number(): finite, or "nan", "inf", "-inf".
double number_value(const Json& v, const char* key) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw bad_input(std::string("event field '") + key + "': not a number: " + s);
  }
  if (!v.is_number()) throw bad_input(std::string("event field '") + key + "': not a number");
  return v.get<double>();
}

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// Writes an event's fields (the `fields` lists below) into a JSON object.
// Numbers go through number(), so NaN and infinities survive.
struct Writer {
  Json& j;
  static constexpr bool reading = false;
  template <typename T>
  void operator()(const char* key, const T& v) {
    j[key] = value(v);
  }
  // Fields written only when `present` (read whenever they are there).
  template <typename F>
  void when(bool present, F&& fields) {
    if (present) fields();
  }

private:
  static Json value(double v) { return number(v); }
  static Json value(RunStatus s) { return status_name(s); }
  static Json value(FailureKind k) { return failure_name(k); }
  static Json value(const DeviceStat& d);
  template <typename T>
  static Json value(const std::optional<T>& v) {
    return v ? value(*v) : Json(nullptr);
  }
  template <typename T>
  static Json value(const std::vector<T>& v) {
    Json out = Json::array();
    for (const auto& x : v) out.push_back(value(x));
    return out;
  }
  template <typename T>
  static Json value(const T& v) {
    return v;
  }
};

// Reads the same fields back: a field that is absent or null keeps the
// struct's default (streams from older versions lack newer fields), a
// field of the wrong kind is bad input naming it.
struct Reader {
  const Json& j;
  static constexpr bool reading = true;
  template <typename T>
  void operator()(const char* key, T& v) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if constexpr (is_optional<T>::value) {
      if (it->is_null()) {
        v.reset();
        return;
      }
      typename T::value_type x{};
      read(key, *it, x);
      v = x;
    } else if (!it->is_null()) {
      read(key, *it, v);
    }
  }
  template <typename F>
  void when(bool, F&& fields) {
    fields();
  }

private:
  static void read(const char* key, const Json& v, double& out) { out = number_value(v, key); }
  static void read(const char* key, const Json& v, RunStatus& out) {
    const auto known = v.is_string() ? status_from_name(v.get<std::string>()) : std::nullopt;
    if (!known)
      throw bad_input(std::string("event field '") + key + "': status must be completed, stopped or failed, got '" + text(v) +
                      "'");
    out = *known;
  }
  static void read(const char* key, const Json& v, FailureKind& out) {
    if (v == "") return;  // as absent: the kind is inferred (fields(FinishedEvent))
    const auto known = v.is_string() ? failure_from_name(v.get<std::string>()) : std::nullopt;
    if (!known) throw bad_input(std::string("event field '") + key + "': unknown failure kind '" + text(v) + "'");
    out = *known;
  }
  static void read(const char* key, const Json& v, DeviceStat& out);
  static std::string text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }
  template <typename T>
  static void read(const char* key, const Json& v, std::vector<T>& out) {
    if (!v.is_array()) throw bad_input(std::string("event field '") + key + "': not a list");
    out.clear();
    for (const auto& x : v) read(key, x, out.emplace_back());
  }
  // Strings, booleans, integers. Integers must be whole numbers their type
  // can represent (a fuzzer found 3e19 reaching an undefined cast); a value
  // of the wrong kind is the library's type error, reported as bad input.
  template <typename T>
  static void read(const char* key, const Json& v, T& out) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      if (v.is_number() && !json_integer_fits<T>(v, true))
        throw bad_input(std::string("event field '") + key + "': " + v.dump() + " is not a whole number in range");
    out = v.get<T>();
  }
};

// Each event's fields, named once for writing and reading (docs/events.md
// is their reference). `when` marks fields a writer leaves out when they do
// not apply.
template <typename IO>
void fields(IO& io, RunStartedEvent& e) {
  io("project", e.project);
  io("strategy", e.strategy);
  io("devices", e.devices);
  io("replicas", e.replicas);
  io("global_batch", e.global_batch);
  io("per_replica_batch", e.per_replica_batch);
  io("steps_per_epoch", e.steps_per_epoch);
  io("epochs", e.epochs);
  io("dataset", e.dataset);
  io("train_examples", e.train_examples);
  io("validation_examples", e.validation_examples);
  io("params", e.params);
  io("cross_device_ops", e.cross_device_ops);
  io.when(e.sharded_update, [&] { io("sharded_update", e.sharded_update); });
  io("threads_per_replica", e.threads_per_replica);
  io("workers", e.workers);
  io("hosts", e.hosts);
  io.when(e.servers > 0, [&] {
    io("servers", e.servers);
    io("staleness_bound", e.staleness_bound);
    io("shards", e.shards);
  });
}

template <typename IO>
void fields(IO& io, StepSpansEvent& e) {
  io("step", e.step);
  io("time", e.time);
  io("lanes", e.lanes);
  io("step_ms", e.step_ms);
  io("kinds", e.kinds);
  io("kind_ms", e.kind_ms);
  io("slowest", e.slowest);
  io("comm_ms", e.comm_ms);
  io("comm_hidden_ms", e.comm_hidden_ms);
}

template <typename IO>
void fields(IO& io, StepEvent& e) {
  io("step", e.step);
  io("epoch", e.epoch);
  io("epoch_step", e.epoch_step);
  io("time", e.time);
  io("replica_losses", e.replica_losses);
  io("loss", e.loss);
  io.when(!std::isnan(e.accuracy), [&] { io("accuracy", e.accuracy); });
  io("lr", e.lr);
  io("samples_per_sec", e.samples_per_sec);
  io("worker_step_times", e.worker_step_times);
  io.when(!e.replica_step_times.empty(), [&] { io("replica_step_times", e.replica_step_times); });
  io.when(e.staleness.has_value(), [&] {
    io("staleness", e.staleness);
    io("worker_steps", e.worker_steps);
    io("lost_workers", e.lost_workers);
    io("server_updates_per_sec", e.server_updates_per_sec);
  });
}

template <typename IO>
void fields(IO& io, EpochEvent& e) {
  io("epoch", e.epoch);
  io("loss", e.loss);
  io("accuracy", e.accuracy);
  io("val_loss", e.val_loss);
  io("val_accuracy", e.val_accuracy);
  io("time", e.time);
  io("samples_per_sec", e.samples_per_sec);
  io("lr", e.lr);
  io("best", e.best);
}

template <typename IO>
void fields(IO& io, DeviceStat& d) {
  io("device", d.device);
  io("utilization", d.utilization);
  io("memory_used", d.memory_used);
  io("memory_total", d.memory_total);
}

template <typename IO>
void fields(IO& io, DeviceStatsEvent& e) {
  io("time", e.time);
  io("devices", e.devices);
}

template <typename IO>
void fields(IO& io, LogEvent& e) {
  io("level", e.level);
  io("message", e.message);
  io("time", e.time);
}

template <typename IO>
void fields(IO& io, CheckpointEvent& e) {
  io("path", e.path);
  io("step", e.step);
  io("epoch", e.epoch);
  io("time", e.time);
}

template <typename IO>
void fields(IO& io, FinishedEvent& e) {
  io("status", e.status);
  io.when(e.status == RunStatus::Failed, [&] { io("failure", e.failure); });
  io("message", e.message);
  io("time", e.time);
  io("steps", e.steps);
  io("epochs_completed", e.epochs_completed);
  io.when(e.stopped_early, [&] { io("stopped_early", e.stopped_early); });
  if (IO::reading && e.status == RunStatus::Failed && e.failure == FailureKind::None) {
    // Streams written before the failure kind existed: what their messages
    // said, the one place a message is read for it.
    const bool diverged = e.message.find("NaN") != std::string::npos || e.message.find("infinite") != std::string::npos;
    e.failure = diverged ? FailureKind::Diverged : FailureKind::Internal;
  }
  if (IO::reading && e.status != RunStatus::Failed) e.failure = FailureKind::None;
}

Json Writer::value(const DeviceStat& d) {
  Json out = Json::object();
  Writer w{out};
  fields(w, const_cast<DeviceStat&>(d));  // a Writer only reads
  return out;
}

void Reader::read(const char* key, const Json& v, DeviceStat& out) {
  if (!v.is_object()) throw bad_input(std::string("event field '") + key + "': not an object");
  Reader r{v};
  fields(r, out);
}

// The alternative of Event whose type name is `type`, read from j.
template <size_t I = 0>
Event read_event(const std::string& type, const Json& j) {
  if constexpr (I == std::variant_size_v<Event>) {
    throw bad_input("event: unknown type '" + type + "'");
  } else {
    using E = std::variant_alternative_t<I, Event>;
    if (type != event_type(Event(std::in_place_index<I>))) return read_event<I + 1>(type, j);
    E e;
    Reader r{j};
    fields(r, e);
    return e;
  }
}
}  // namespace

Json event_to_json(const Event& event) {
  Json j;
  j["type"] = event_type(event);
  Writer w{j};
  std::visit([&](const auto& e) { fields(w, const_cast<std::decay_t<decltype(e)>&>(e)); }, event);  // a Writer only reads
  return j;
}

std::string event_to_jsonl(const Event& event) { return event_to_json(event).dump(); }

Event event_from_json(const Json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) throw bad_input("event: missing \"type\"");
  const std::string type = j["type"];
  try {
    return read_event(type, j);
  } catch (const nlohmann::json::exception& ex) {
    throw bad_input("event '" + type + "': " + ex.what());
  }
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
