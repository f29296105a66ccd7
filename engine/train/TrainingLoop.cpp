#include "train/TrainingLoop.h"

namespace strata {

TrainingPosition next_epoch(const TrainingPosition& pos) {
  return TrainingPosition{pos.step, pos.epoch + 1, 0, false, 0, 0, 0, pos.elapsed, {}};
}

std::string stop_message(const TrainingPosition& pos) {
  // A stop that lands between epochs names the epoch that ended, as the
  // progress bar (the last step's epoch) does, not the one about to begin.
  if (pos.epoch_step == 0 && pos.epoch > 1)
    return "stopped by request after epoch " + std::to_string(pos.epoch - 1) + " (step " + std::to_string(pos.step) + ")";
  return "stopped by request after step " + std::to_string(pos.step) + " (epoch " + std::to_string(pos.epoch) + ")";
}

}  // namespace strata
