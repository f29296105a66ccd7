#pragma once
// Builds what a project's settings name: the model (unbuilt), the optimizer
// and the loss. The Trainer uses them, and so do front ends and tools that
// need a model without training it (the dashboard's model summary, the
// differential probe, benchmarks).
#include <memory>

#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"
#include "train/RunConfig.h"

namespace strata {

// bad_input on an empty model or an unknown layer (its path in the project
// file, e.g. "model.layers[2].units: ...").
std::unique_ptr<nn::Sequential> make_model(const RunConfig& config);
// bad_input on an unknown optimizer type.
std::unique_ptr<nn::Optimizer> make_optimizer(const OptimizerConfig& config);
// bad_input on a loss that does not fit labelled classification data.
std::unique_ptr<nn::Loss> make_loss(const TrainingConfig& config);

}  // namespace strata
