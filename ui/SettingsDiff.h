#pragma once
// Two runs' settings side by side: each project (config.json) flattened to
// "training.optimizer.learning_rate = 0.001" rows over the union of their
// settings, the rows that differ marked. Qt-free.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::ui {

struct SettingRow {
  std::string path;  // "training.optimizer.learning_rate", "model.layers[1].units"
  std::string a, b;  // the values as JSON text; empty where a run lacks the setting
  bool differs = false;
};

// In path order as the projects write them (a's first, then b's own).
std::vector<SettingRow> diff_settings(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace strata::ui
