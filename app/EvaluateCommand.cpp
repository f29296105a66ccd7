#include "EvaluateCommand.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "project/WeightExport.h"
#include "train/Trainer.h"

namespace strata {

int evaluate_command(const RunConfig& config, const std::string& checkpoint, bool json) {
  NullSink sink;
  Trainer trainer(config, sink);
  const std::string resolved = checkpoint.ends_with(".safetensors") ? checkpoint : CheckpointManager::resolve(checkpoint);
  Trainer::Evaluation e = trainer.evaluate_checkpoint(resolved);
  const auto& data = trainer.data();
  const auto per_class = e.per_class_accuracy();
  const std::string split = config.dataset.validation_split > 0 ? "validation" : "test";

  if (json) {
    nlohmann::json j{{"type", "evaluation"},
                     {"checkpoint", resolved},
                     {"split", split},
                     {"examples", e.examples},
                     {"loss", e.loss},
                     {"accuracy", e.accuracy},
                     {"per_class_accuracy", per_class},
                     {"confusion_matrix", e.confusion}};
    std::vector<std::string> names;
    for (size_t c = 0; c < per_class.size(); ++c) names.push_back(class_name(config.dataset, static_cast<int>(c)));
    j["class_names"] = names;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("Evaluation of %s\n%s split of %s: %lld examples\n", resolved.c_str(), split.c_str(), data.description.c_str(),
              static_cast<long long>(e.examples));
  std::printf("loss %.4f  accuracy %.4f\n\nper-class accuracy:\n", e.loss, e.accuracy);
  for (size_t c = 0; c < per_class.size(); ++c)
    std::printf("  %2zu %-14s %.4f\n", c, class_name(config.dataset, static_cast<int>(c)).c_str(), per_class[c]);
  std::printf("\nconfusion matrix (rows: true class, columns: predicted):\n     ");
  for (size_t c = 0; c < e.confusion.size(); ++c) std::printf("%6zu", c);
  std::printf("\n");
  for (size_t r = 0; r < e.confusion.size(); ++r) {
    std::printf("  %2zu ", r);
    for (auto v : e.confusion[r]) std::printf("%6lld", static_cast<long long>(v));
    std::printf("\n");
  }
  return 0;
}

int export_command(const RunConfig& config, const std::string& checkpoint, const std::string& out) {
  const int64_t params = export_checkpoint_weights(config, checkpoint, out);
  std::printf("wrote %s (%lld parameters)\n", out.c_str(), static_cast<long long>(params));
  return 0;
}

}  // namespace strata
