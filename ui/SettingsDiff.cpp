#include "SettingsDiff.h"

#include <map>

namespace strata::ui {

namespace {
// Leaves (and empty containers) in document order, with their paths.
void flatten(const nlohmann::json& j, const std::string& path, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out.emplace_back(path, j.dump());  // scalars and arrays of scalars (devices, kernel sizes) whole
  }
}
}  // namespace

std::vector<SettingRow> diff_settings(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::pair<std::string, std::string>> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::map<std::string, std::string> in_b(fb.begin(), fb.end());
  std::vector<SettingRow> rows;
  std::map<std::string, bool> seen;
  for (auto& [path, value] : fa) {
    SettingRow r{path, value, in_b.count(path) ? in_b[path] : std::string(), false};
    r.differs = r.a != r.b;
    rows.push_back(r);
    seen[path] = true;
  }
  for (auto& [path, value] : fb)
    if (!seen.count(path)) rows.push_back(SettingRow{path, std::string(), value, true});
  return rows;
}

}  // namespace strata::ui
