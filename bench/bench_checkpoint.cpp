// Checkpoint write and load time and size for a project's model (weights +
// optimizer state + state.json), e.g. the MLP and the TF-tutorial CNN:
//   bench_checkpoint resources/examples/fashion-mlp.strata [--reps N]
// Prints one JSON line. The model is built and trained for one step so the
// optimizer slots exist; the data set is the project's (loaded once).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "project/ProjectFile.h"
#include "train/Trainer.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_checkpoint PROJECT.strata [--reps N]\n");
    return 2;
  }
  int reps = 5;
  for (int i = 2; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  try {
    RunConfig config = load_project(argv[1]);
    config.training.epochs = 1;
    config.training.max_steps_per_epoch = 1;
    NullSink sink;
    Trainer trainer(config, sink);
    trainer.prepare();
    trainer.run();  // one step: the optimizer's slots now exist
    const fs::path root = fs::temp_directory_path() / ("strata-bench-ckpt-" + std::to_string(::getpid()));
    CheckpointManager manager(root.string(), CheckpointConfig{0, true, reps + 1, false});
    double write = 1e9, load = 1e9;
    std::string dir;
    for (int r = 0; r < reps; ++r) {
      TrainingPosition pos;
      pos.step = r + 1;
      auto t0 = std::chrono::steady_clock::now();
      dir = manager.save(trainer.model(), trainer.optimizer(), pos, strata::ValidationFigures{}, "one_device", 1, "bench");
      write = std::min(write, seconds_since(t0));
      t0 = std::chrono::steady_clock::now();
      CheckpointManager::load(dir, trainer.model(), &trainer.optimizer());
      load = std::min(load, seconds_since(t0));
    }
    uintmax_t bytes = 0;
    for (auto& e : fs::directory_iterator(dir)) bytes += fs::file_size(e.path());
    nlohmann::json j{{"bench", "checkpoint"},
                     {"project", config.name},
                     {"params", trainer.model().param_count()},
                     {"bytes", bytes},
                     {"write_ms_best", write * 1e3},
                     {"load_ms_best", load * 1e3},
                     {"reps", reps}};
    std::printf("%s\n", j.dump().c_str());
    fs::remove_all(root);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_checkpoint: %s\n", e.what());
    return 2;
  }
}
