#pragma once
// Every strategy, and building one by name: for code that picks a strategy
// from a project file or a flag. Each strategy has its own header.
#include <memory>
#include <string>
#include <vector>

#include "distribute/CentralStorageStrategy.h"
#include "distribute/MirroredStrategy.h"
#include "distribute/MultiWorkerMirroredStrategy.h"
#include "distribute/OneDeviceStrategy.h"
#include "distribute/parameter_server/ParameterServerStrategy.h"

namespace strata {

// Strategy names accepted by project files and --strategy.
std::vector<std::string> strategy_names();
// Builds a strategy by name; bad_input for an unknown name or bad devices.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options);

}  // namespace strata
