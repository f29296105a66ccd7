#include "train/Checkpoint.h"

#include "core/JsonInteger.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>

#include "core/AtomicFile.h"
#include "core/Error.h"
#include "core/JsonInteger.h"
#include "core/ParseInteger.h"
#include "train/SafeTensors.h"

namespace strata {

namespace fs = std::filesystem;

namespace {
constexpr const char* kStateFormat = "strata-checkpoint";

std::string file_crc(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string b = ss.str();
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", crc32_z(0L, reinterpret_cast<const Bytef*>(b.data()), b.size()));
  return buf;
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": missing (incomplete checkpoint)");
  try {
    return Json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw bad_input(path + ": corrupt (not JSON)");
  }
}

int64_t step_of(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.rfind("ckpt-", 0) != 0) return -1;
  try {
    return std::stoll(name.substr(5));
  } catch (...) {
    return -1;
  }
}

bool valid(const fs::path& dir) { return step_of(dir) >= 0 && fs::exists(dir / "state.json"); }
}  // namespace

std::string project_hash(const RunConfig& c) {
  Json j;
  j["layers"] = c.layers;
  j["dataset"] = c.dataset.kind;
  j["optimizer"] = c.training.optimizer.type;
  j["loss"] = c.training.loss;
  const std::string s = j.dump();
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", crc32_z(0L, reinterpret_cast<const Bytef*>(s.data()), s.size()));
  return buf;
}

CheckpointManager::CheckpointManager(std::string root, CheckpointConfig config) : root_(std::move(root)), config_(config) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw bad_input("checkpoint folder " + root_ + ": cannot create (" + ec.message() + ")");
}

std::string CheckpointManager::save(nn::Sequential& model, nn::Optimizer& optimizer, const TrainingPosition& pos,
                                    const ValidationFigures& validation, const std::string& strategy, int replicas,
                                    const std::string& hash) {
  // Written into a hidden folder and renamed into place when complete: a
  // full disk or a kill midway leaves no ckpt-N that looks like a checkpoint,
  // and `latest` moves only after the rename.
  const fs::path final_dir = fs::path(root_) / ("ckpt-" + std::to_string(pos.step));
  const fs::path dir = fs::path(root_) / (".writing-ckpt-" + std::to_string(pos.step));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw bad_input("checkpoint " + dir.string() + ": cannot create (" + ec.message() + ")");
  try {
    write_files(dir, model, optimizer, pos, validation, strategy, replicas, hash);
    fs::remove_all(final_dir, ec);  // an earlier checkpoint of this very step
    fs::rename(dir, final_dir);
  } catch (const Error&) {
    fs::remove_all(dir, ec);
    throw;
  } catch (const std::exception& e) {  // the rename's filesystem_error
    fs::remove_all(dir, ec);
    throw bad_input("checkpoint " + final_dir.string() + ": " + e.what());
  }
  write_file_atomically((fs::path(root_) / "latest").string(), final_dir.filename().string() + "\n");
  prune();
  return final_dir.string();
}

void CheckpointManager::write_files(const fs::path& dir, nn::Sequential& model, nn::Optimizer& optimizer,
                                    const TrainingPosition& pos, const ValidationFigures& validation,
                                    const std::string& strategy, int replicas, const std::string& hash) {

  SafeTensorsFile weights;
  weights.metadata["format"] = "strata-weights";
  for (auto* v : model.variables()) weights.tensors.emplace_back(v->name(), v->component(0));
  write_safetensors((dir / "model.safetensors").string(), weights);

  SafeTensorsFile opt;
  opt.metadata["format"] = "strata-optimizer";
  opt.metadata["optimizer"] = optimizer.type();
  opt.metadata["iterations"] = std::to_string(optimizer.iterations());
  opt.metadata["config"] = optimizer.config().dump();
  for (auto& [name, v] : optimizer.slot_variables()) opt.tensors.emplace_back(name, v->component(0));
  write_safetensors((dir / "optimizer.safetensors").string(), opt);

  Json layers = Json::object();
  for (auto& l : model.layers())
    if (auto s = l->extra_state(); !s.is_null()) layers[l->name()] = s;
  Json state{{"format", kStateFormat},
             {"version", 1},
             {"step", pos.step},
             {"epoch", pos.epoch},
             {"epoch_step", pos.epoch_step},
             {"epoch_complete", pos.epoch_complete},
             {"epoch_loss_sum", pos.epoch_loss_sum},
             {"epoch_correct", pos.epoch_correct},
             {"epoch_seen", pos.epoch_seen},
             {"elapsed", pos.elapsed},
             {"strategy", strategy},
             {"replicas", replicas},
             {"optimizer", optimizer.type()},
             {"project_hash", hash},
             {"val_loss", validation.loss ? Json(*validation.loss) : Json(nullptr)},
             {"val_accuracy", validation.accuracy ? Json(*validation.accuracy) : Json(nullptr)},
             {"val_epoch", validation.epoch},
             {"callbacks", pos.callbacks},
             {"layers", layers},
             {"files",
              {{"model.safetensors", file_crc((dir / "model.safetensors").string())},
               {"optimizer.safetensors", file_crc((dir / "optimizer.safetensors").string())}}}};
  write_file_atomically((dir / "state.json").string(), state.dump(2) + "\n");
}

void CheckpointManager::prune() {
  std::vector<std::pair<int64_t, fs::path>> all;
  for (auto& e : fs::directory_iterator(root_))
    if (e.is_directory() && step_of(e.path()) >= 0) all.emplace_back(step_of(e.path()), e.path());
  std::sort(all.begin(), all.end());
  std::vector<fs::path> keep;
  int kept = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (valid(it->second) && kept < std::max(1, config_.keep)) {
      keep.push_back(it->second);
      ++kept;
    }
  if (config_.keep_best) {
    double best = -1;
    fs::path best_dir;
    for (auto& [step, dir] : all) {
      if (!valid(dir)) continue;
      Json s = read_json((dir / "state.json").string());
      if (s["val_accuracy"].is_number() && s["val_accuracy"].get<double>() >= best) {  // ties: the newer
        best = s["val_accuracy"].get<double>();
        best_dir = dir;
      }
    }
    if (!best_dir.empty()) keep.push_back(best_dir);
  }
  // Folders a killed writer left half-written.
  std::vector<fs::path> stale;
  for (auto& e : fs::directory_iterator(root_))
    if (e.is_directory() && e.path().filename().string().rfind(".writing-", 0) == 0) stale.push_back(e.path());
  for (auto& p : stale) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  const int64_t newest = all.empty() ? -1 : all.back().first;
  for (auto& [step, dir] : all) {
    // Never remove the folder being written (the newest), valid or not.
    if (step == newest || std::find(keep.begin(), keep.end(), dir) != keep.end()) continue;
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

std::optional<std::string> CheckpointManager::latest(const std::string& root) {
  // A file (a project named where a run folder belongs) holds no checkpoints
  // either: listing it would throw the library's "Not a directory".
  if (!fs::is_directory(root)) return std::nullopt;
  std::ifstream in(fs::path(root) / "latest");
  std::string name;
  if (in >> name && valid(fs::path(root) / name)) return (fs::path(root) / name).string();
  // No pointer (or it names a removed folder): the newest valid folder.
  int64_t best = -1;
  std::string found;
  std::error_code unreadable;
  fs::directory_iterator entries(root, unreadable);
  if (unreadable) throw bad_input(root + ": cannot list its checkpoints (" + unreadable.message() + ")");
  for (auto& e : entries)
    if (e.is_directory() && valid(e.path()) && step_of(e.path()) > best) {
      best = step_of(e.path());
      found = e.path().string();
    }
  if (found.empty()) return std::nullopt;
  return found;
}

CheckpointInfo CheckpointManager::read_info(const std::string& dir) {
  const std::string path = (fs::path(dir) / "state.json").string();
  Json s = read_json(path);
  if (!s.is_object() || s.value("format", Json()) != kStateFormat) throw bad_input(path + ": not a Strata checkpoint");
  // Each field read with its type checked: a state.json edited by hand or
  // damaged names the field instead of failing inside the JSON library.
  auto field = [&](const char* name, auto fallback) {
    using T = decltype(fallback);
    const auto it = s.find(name);
    if (it == s.end() || it->is_null()) return fallback;
    bool ok = false;
    if constexpr (std::is_same_v<T, bool>) ok = it->is_boolean();
    else if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
    else if constexpr (std::is_integral_v<T>) ok = json_integer_fits<T>(*it, false);
    else ok = it->is_number();
    if (!ok)
      throw bad_input(path + ": field '" + name + "' must be " +
                      (std::is_same_v<T, bool>          ? "a boolean"
                       : std::is_same_v<T, std::string> ? "a string"
                       : std::is_integral_v<T>          ? "an integer in range"
                                                        : "a number") +
                      ", got " + it->dump());
    return it->template get<T>();
  };
  if (field("version", 0) > 1) throw bad_input(path + ": written by a newer Strata (version " + std::to_string(field("version", 0)) + ")");
  CheckpointInfo info;
  info.dir = dir;
  auto& p = info.position;
  p.step = field("step", int64_t{0});
  p.epoch = field("epoch", 1);
  p.epoch_step = field("epoch_step", int64_t{0});
  p.epoch_complete = field("epoch_complete", false);
  p.epoch_loss_sum = field("epoch_loss_sum", 0.0);
  p.epoch_correct = field("epoch_correct", int64_t{0});
  p.epoch_seen = field("epoch_seen", int64_t{0});
  p.elapsed = field("elapsed", 0.0);
  if (s.contains("val_loss") && !s["val_loss"].is_null()) info.val_loss = field("val_loss", 0.0);
  if (s.contains("val_accuracy") && !s["val_accuracy"].is_null()) info.val_accuracy = field("val_accuracy", 0.0);
  info.val_epoch = field("val_epoch", 0);
  if (auto c = s.find("callbacks"); c != s.end() && c->is_object()) p.callbacks = *c;
  info.strategy = field("strategy", std::string());
  info.optimizer = field("optimizer", std::string());
  info.project_hash = field("project_hash", std::string());
  info.replicas = field("replicas", 1);
  if (p.step < 0 || p.epoch < 1 || p.epoch_step < 0 || info.replicas < 1)
    throw bad_input(path + ": step, epoch or replica count out of range");
  return info;
}

std::string CheckpointManager::resolve(const std::string& path) {
  const fs::path p(path);
  if (fs::exists(p / "state.json")) return path;
  for (const fs::path& root : {p / "checkpoints", p})
    if (auto found = latest(root.string())) return *found;
  throw bad_input(path + ": no checkpoint found (expected a ckpt-N folder, a run folder or its checkpoints/)");
}

namespace {
void check_weights(const SafeTensorsFile& weights, const std::string& path, nn::Sequential& model) {
  for (auto* v : model.variables()) {
    const Tensor* t = weights.find(v->name());
    if (!t) throw bad_input(path + ": tensor '" + v->name() + "' is missing (the weights are of a different model)");
    if (t->shape() != v->shape())
      throw bad_input(path + ": tensor '" + v->name() + "' has shape " + t->shape().str() + ", the model expects " +
                      v->shape().str());
  }
}

// Checks every variable against the file before assigning any.
void assign_weights(const SafeTensorsFile& weights, const std::string& path, nn::Sequential& model) {
  check_weights(weights, path, model);
  for (auto* v : model.variables()) v->assign(*weights.find(v->name()));
}
}  // namespace

void CheckpointManager::load_weights(const std::string& path, nn::Sequential& model) {
  if (fs::path(path).extension() == ".safetensors") {
    assign_weights(read_safetensors(path), path, model);
    return;
  }
  load(resolve(path), model, nullptr);
}

void CheckpointManager::export_weights(const std::string& checkpoint, nn::Sequential& model, const std::string& out,
                                       const std::string& project_name) {
  load_weights(checkpoint, model);
  SafeTensorsFile f;
  f.metadata["format"] = "strata-weights";
  f.metadata["project"] = project_name;
  f.metadata["layout"] = "NHWC images; dense kernels (in, out); conv kernels (kh, kw, in, out)";
  for (auto* v : model.variables()) f.tensors.emplace_back(v->name(), v->component(0));
  write_safetensors(out, f);
}

CheckpointInfo CheckpointManager::load(const std::string& dir, nn::Sequential& model, nn::Optimizer* optimizer) {
  CheckpointInfo info = read_info(dir);
  Json state = read_json((fs::path(dir) / "state.json").string());
  for (const char* f : {"model.safetensors", "optimizer.safetensors"}) {
    const std::string path = (fs::path(dir) / f).string();
    if (!fs::exists(path)) throw bad_input(path + ": missing (incomplete checkpoint)");
    if (state.contains("files") && state["files"].contains(f) && state["files"][f] != file_crc(path))
      throw bad_input(path + ": checksum mismatch: the file is corrupted or was replaced");
  }
  // Read and check everything before assigning anything.
  const std::string model_path = (fs::path(dir) / "model.safetensors").string();
  SafeTensorsFile weights = read_safetensors(model_path);
  check_weights(weights, model_path, model);
  SafeTensorsFile opt;
  const std::string opt_path = (fs::path(dir) / "optimizer.safetensors").string();
  if (optimizer) {
    opt = read_safetensors(opt_path);
    if (opt.metadata["optimizer"] != optimizer->type())
      throw bad_input(opt_path + ": optimizer state is for '" + opt.metadata["optimizer"] + "', the project uses '" +
                      optimizer->type() + "'");
    // An optimizer already built keeps its variables: under a parameter-server
    // strategy its slots belong to the servers' copies, not the model's.
    if (optimizer->slot_variables().empty()) optimizer->build(model.trainable_variables());
    for (auto& [name, v] : optimizer->slot_variables()) {
      const Tensor* t = opt.find(name);
      if (!t || t->shape() != v->shape())
        throw bad_input(opt_path + ": slot '" + name + "' is missing or has the wrong shape");
    }
  }
  std::optional<int64_t> iterations;
  if (optimizer) {
    const std::string& saved = opt.metadata["iterations"];
    iterations = parse_integer<int64_t>(saved);
    if (!iterations || *iterations < 0)
      throw bad_input(opt_path + ": the optimizer's iteration count is missing or not a count ('" + saved + "')");
  }
  // Layer state (dropout's counters) before the weights: each layer reads
  // its state whole or throws unchanged, and the layers already given theirs
  // get their own back, so a damaged state.json leaves the whole model (its
  // weights too) as it was.
  if (state.contains("layers") && state["layers"].is_object()) {
    std::vector<std::pair<nn::Layer*, Json>> before;
    for (auto& l : model.layers()) {
      if (!state["layers"].contains(l->name())) continue;
      before.emplace_back(l.get(), l->extra_state());
      try {
        l->set_extra_state(state["layers"][l->name()]);
      } catch (...) {
        before.pop_back();
        for (auto& [layer, own] : before) try {
            layer->set_extra_state(own);  // what it wrote itself, read back
          } catch (...) {
          }
        try {
          throw;
        } catch (const Error& e) {
          throw bad_input((fs::path(dir) / "state.json").string() + ": " + e.what());
        }
      }
    }
  }
  assign_weights(weights, model_path, model);
  if (optimizer) {
    for (auto& [name, v] : optimizer->slot_variables()) v->assign(*opt.find(name));
    optimizer->set_iterations(*iterations);
  }
  return info;
}

}  // namespace strata
