#include "train/TrainingCallbacks.h"

#include <algorithm>
#include <cstdio>

namespace strata {

namespace {
bool is_monitor(const std::string& m) { return m == "loss" || m == "accuracy" || m == "val_loss" || m == "val_accuracy"; }
bool lower_is_better(const std::string& m) { return m == "loss" || m == "val_loss"; }
}  // namespace

TrainingCallbacks::TrainingCallbacks(const TrainingConfig& config) : config_(config) {
  stopping_.monitor = config.early_stopping.monitor;
  stopping_.min_delta = config.early_stopping.min_delta;
  plateau_.monitor = config.reduce_lr_on_plateau.monitor;
  plateau_.min_delta = config.reduce_lr_on_plateau.min_delta;
  // The checkpoint pruner keeps the highest validation accuracy (ties: the newer).
  best_checkpoint_.monitor = "val_accuracy";
  best_checkpoint_.ties_improve = true;
}

bool TrainingCallbacks::Watch::improves(double value) const {
  if (!best) return true;
  if (ties_improve && value == *best) return true;
  return lower_is_better(monitor) ? value < *best - min_delta : value > *best + min_delta;
}

std::optional<double> TrainingCallbacks::read(const std::string& monitor, const EpochFigures& f) {
  if (monitor == "loss") return f.loss;
  if (monitor == "accuracy") return f.accuracy;
  if (monitor == "val_loss") return f.val_loss;
  if (monitor == "val_accuracy") return f.val_accuracy;
  return std::nullopt;
}

double TrainingCallbacks::learning_rate(double scheduled) const {
  const double lr = scheduled * lr_scale_;
  // Reductions never take the rate below the plateau's floor.
  return lr_scale_ < 1.0 ? std::max(lr, config_.reduce_lr_on_plateau.min_lr) : lr;
}

TrainingCallbacks::Decision TrainingCallbacks::end_epoch(int epoch, const EpochFigures& figures, double lr) {
  Decision d;
  if (config_.checkpoint.keep_best) {
    if (auto v = read(best_checkpoint_.monitor, figures); v && best_checkpoint_.improves(*v)) {
      best_checkpoint_.best = v;
      best_checkpoint_.best_epoch = epoch;
      d.best = true;
    }
  }
  const ReduceLrOnPlateauConfig& p = config_.reduce_lr_on_plateau;
  if (p.enabled) {
    if (auto v = read(plateau_.monitor, figures)) {
      if (cooldown_ > 0) {
        --cooldown_;
        plateau_.wait = 0;
      }
      if (plateau_.improves(*v)) {
        plateau_.best = v;
        plateau_.best_epoch = epoch;
        plateau_.wait = 0;
      } else if (cooldown_ == 0 && ++plateau_.wait >= p.patience) {
        plateau_.wait = 0;
        if (lr > p.min_lr) {
          const double next = std::max(lr * p.factor, p.min_lr);
          lr_scale_ *= next / lr;
          cooldown_ = p.cooldown;
          char note[256];
          std::snprintf(note, sizeof note,
                        "reduce_lr_on_plateau: %s has not improved for %d epoch%s (best %.6g at epoch %d); learning rate %.6g -> %.6g",
                        p.monitor.c_str(), p.patience, p.patience == 1 ? "" : "s", *plateau_.best, plateau_.best_epoch, lr,
                        next);
          d.notes.push_back(note);
        }
      }
    }
  }
  const EarlyStoppingConfig& e = config_.early_stopping;
  if (e.enabled) {
    if (auto v = read(stopping_.monitor, figures)) {
      if (stopping_.improves(*v)) {
        stopping_.best = v;
        stopping_.best_epoch = epoch;
        stopping_.wait = 0;
      } else if (++stopping_.wait >= e.patience) {
        char why[256];
        std::snprintf(why, sizeof why, "stopped early after epoch %d: %s has not improved for %d epoch%s (best %.6g at epoch %d)",
                      epoch, e.monitor.c_str(), e.patience, e.patience == 1 ? "" : "s", *stopping_.best, stopping_.best_epoch);
        d.stop = why;
      }
    }
  }
  return d;
}

nlohmann::json TrainingCallbacks::state() const {
  auto watch = [](const Watch& w) {
    return nlohmann::json{{"best", w.best ? nlohmann::json(*w.best) : nlohmann::json(nullptr)},
                          {"best_epoch", w.best_epoch},
                          {"wait", w.wait}};
  };
  return {{"early_stopping", watch(stopping_)},
          {"reduce_lr_on_plateau", watch(plateau_)},
          {"best_checkpoint", watch(best_checkpoint_)},
          {"cooldown", cooldown_},
          {"lr_scale", lr_scale_}};
}

void TrainingCallbacks::restore(const nlohmann::json& s) {
  *this = TrainingCallbacks(config_);
  if (!s.is_object()) return;
  auto watch = [&](Watch& w, const char* key) {
    const auto it = s.find(key);
    if (it == s.end() || !it->is_object()) return;
    if (auto b = it->find("best"); b != it->end() && b->is_number()) w.best = b->get<double>();
    if (auto b = it->find("best_epoch"); b != it->end() && b->is_number_integer()) w.best_epoch = b->get<int>();
    if (auto b = it->find("wait"); b != it->end() && b->is_number_integer()) w.wait = std::max(0, b->get<int>());
  };
  watch(stopping_, "early_stopping");
  watch(plateau_, "reduce_lr_on_plateau");
  watch(best_checkpoint_, "best_checkpoint");
  if (auto c = s.find("cooldown"); c != s.end() && c->is_number_integer()) cooldown_ = std::max(0, c->get<int>());
  if (auto c = s.find("lr_scale"); c != s.end() && c->is_number() && c->get<double>() > 0 && c->get<double>() <= 1)
    lr_scale_ = c->get<double>();
}

std::vector<std::string> check_callbacks(const TrainingConfig& t, bool has_validation) {
  std::vector<std::string> problems;
  auto monitor = [&](bool enabled, const std::string& m, const std::string& path) {
    if (!enabled) return;
    if (!is_monitor(m))
      problems.push_back(path + ".monitor: must be one of loss, accuracy, val_loss, val_accuracy, got \"" + m + "\"");
    else if (m.rfind("val_", 0) == 0 && !has_validation)
      problems.push_back(path + ".monitor: " + m +
                         " needs validation data (the dataset has no test split and dataset.validation_split is 0)");
  };
  const EarlyStoppingConfig& e = t.early_stopping;
  monitor(e.enabled, e.monitor, "training.early_stopping");
  if (e.patience < 1) problems.push_back("training.early_stopping.patience: must be a positive integer");
  if (!(e.min_delta >= 0)) problems.push_back("training.early_stopping.min_delta: must be >= 0");
  const ReduceLrOnPlateauConfig& p = t.reduce_lr_on_plateau;
  monitor(p.enabled, p.monitor, "training.reduce_lr_on_plateau");
  if (!(p.factor > 0 && p.factor < 1)) problems.push_back("training.reduce_lr_on_plateau.factor: must be a number in (0, 1)");
  if (p.patience < 1) problems.push_back("training.reduce_lr_on_plateau.patience: must be a positive integer");
  if (p.cooldown < 0) problems.push_back("training.reduce_lr_on_plateau.cooldown: must be a non-negative integer");
  if (!(p.min_delta >= 0)) problems.push_back("training.reduce_lr_on_plateau.min_delta: must be >= 0");
  if (!(p.min_lr >= 0)) problems.push_back("training.reduce_lr_on_plateau.min_lr: must be >= 0");
  return problems;
}

}  // namespace strata
