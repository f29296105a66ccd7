#include "train/ModelFactory.h"

#include "core/Error.h"
#include "nn/LayerFactory.h"

namespace strata {

std::unique_ptr<nn::Sequential> make_model(const RunConfig& config) {
  if (config.layers.empty()) throw bad_input("model.layers: the model has no layers");
  auto model = std::make_unique<nn::Sequential>();
  for (size_t i = 0; i < config.layers.size(); ++i)
    model->add(nn::make_layer(config.layers[i], "model.layers[" + std::to_string(i) + "]"));
  return model;
}

std::unique_ptr<nn::Optimizer> make_optimizer(const OptimizerConfig& c) {
  if (c.type == "adam") return std::make_unique<nn::Adam>(c.learning_rate, c.beta_1, c.beta_2, c.epsilon);
  if (c.type == "sgd") return std::make_unique<nn::SGD>(c.learning_rate, c.momentum, c.nesterov);
  throw bad_input("training.optimizer.type: unknown optimizer '" + c.type + "' (choose adam or sgd)");
}

std::unique_ptr<nn::Loss> make_loss(const TrainingConfig& c) {
  // Reduction None: the step scales by the global batch (compute_average_loss).
  if (c.loss == "sparse_categorical_crossentropy")
    return std::make_unique<nn::SparseCategoricalCrossentropy>(c.from_logits, nn::Reduction::None);
  throw bad_input("training.loss: '" + c.loss +
                  "' is not supported for labelled classification data "
                  "(use sparse_categorical_crossentropy)");
}

}  // namespace strata
