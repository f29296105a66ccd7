#include "CheckpointEvaluation.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "nn/Metrics.h"
#include "project/ProjectFile.h"

namespace strata::ui {

namespace fs = std::filesystem;

std::vector<CheckpointEntry> list_checkpoints(const std::string& run_dir) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  const fs::path root = fs::path(run_dir) / "checkpoints";
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory() || !entry.path().filename().string().starts_with("ckpt-")) continue;
    try {
      const CheckpointInfo info = CheckpointManager::read_info(entry.path().string());
      out.push_back({entry.path().string(), info.position.step, info.position.epoch, info.val_accuracy, info.val_epoch});
    } catch (const std::exception&) {
      // Half-written (killed mid-save) or corrupt: not offered.
    }
  }
  std::sort(out.begin(), out.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step > b.step; });
  return out;
}

bool has_checkpoint(const std::string& run_dir) {
  try {
    return CheckpointManager::latest(run_dir + "/checkpoints").has_value();
  } catch (const std::exception&) {
    return false;
  }
}

RunConfig run_config(const std::string& run_dir, const std::string& base_dir) {
  const std::string path = run_dir + "/config.json";
  std::ifstream in(path);
  if (!in) throw bad_input(path + ": cannot open");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const std::exception& e) {
    throw bad_input(path + ": " + e.what());
  }
  return project_from_json(j, base_dir);
}

CheckpointEvaluation evaluate_checkpoint(const RunConfig& config, const std::string& checkpoint, int samples) {
  RunConfig on_host = config;
  on_host.strategy = StrategyConfig{};  // one_device on the host; the run's own strategy settings do not apply
  on_host.strategy.devices = {Device{}.str()};
  NullSink sink;
  Trainer trainer(on_host, sink);
  CheckpointEvaluation out;
  out.checkpoint = checkpoint;
  out.device = on_host.strategy.devices.front();
  out.evaluation = trainer.evaluate_checkpoint(checkpoint);
  const auto& data = trainer.data();
  for (size_t c = 0; c < out.evaluation.confusion.size(); ++c) out.class_names.push_back(class_name(config.dataset, static_cast<int>(c)));

  const Dataset& test = *data.validation;
  const int64_t n = std::min<int64_t>(samples, test.size());
  if (n <= 0) return out;
  // The model computes where its (first replica's) weights live.
  const Batch batch = test.range(0, n).to(trainer.strategy().devices().front());
  const Tensor logits = trainer.model()(batch.features, false);
  const std::vector<int32_t> predicted = nn::argmax_rows(logits);
  const Shape& shape = test.example_shape();
  // Images are (rows, cols, 1) uint8; anything else is shown as text only.
  const bool image = test.is_uint8() && shape.rank() >= 2 && (shape.rank() == 2 || shape[2] == 1);
  for (int64_t i = 0; i < n; ++i) {
    SamplePrediction s;
    s.label = test.labels()[static_cast<size_t>(i)];
    s.predicted = predicted[static_cast<size_t>(i)];
    if (image) {
      s.rows = static_cast<int>(shape[0]);
      s.cols = static_cast<int>(shape[1]);
      const auto px = test.pixels(i);
      s.pixels.assign(px.begin(), px.end());
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace strata::ui
