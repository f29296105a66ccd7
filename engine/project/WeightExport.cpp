#include "project/WeightExport.h"

#include "train/Trainer.h"

namespace strata {

int64_t export_checkpoint_weights(const RunConfig& config, const std::string& checkpoint, const std::string& out) {
  // The model is built as a run builds it (its input shape comes from the
  // data), so the checkpoint's tensors are checked against its variables.
  NullSink sink;
  Trainer trainer(config, sink);
  trainer.prepare();
  CheckpointManager::export_weights(checkpoint, trainer.model(), out, config.name);
  return trainer.model().param_count();
}

}  // namespace strata
