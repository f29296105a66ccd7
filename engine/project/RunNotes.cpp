#include "project/RunNotes.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/AtomicFile.h"
#include "core/Error.h"

namespace strata {

namespace {
constexpr const char* kFile = "run.json";

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::vector<std::string> clean(const std::vector<std::string>& tags) {
  std::vector<std::string> out;
  for (const auto& t : tags) {
    const std::string v = trimmed(t);
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}
}  // namespace

std::vector<std::string> parse_tags(const std::string& text) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == ',') parts.emplace_back();
    else parts.back() += c;
  }
  return clean(parts);
}

RunNotes read_run_notes(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / kFile).string();
  RunNotes n;
  std::ifstream in(path);
  if (!in) return n;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    throw bad_input(path + ": not valid JSON");
  }
  if (!j.is_object()) throw bad_input(path + ": must be a JSON object");
  auto text = [&](const char* key, std::string& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_string()) throw bad_input(path + ": field '" + key + "' must be a string");
    out = j[key].get<std::string>();
  };
  text("name", n.name);
  text("notes", n.notes);
  if (j.contains("tags")) {
    if (!j["tags"].is_array()) throw bad_input(path + ": field 'tags' must be an array of strings");
    for (const auto& t : j["tags"]) {
      if (!t.is_string()) throw bad_input(path + ": field 'tags' must be an array of strings");
      n.tags.push_back(t.get<std::string>());
    }
  }
  n.name = trimmed(n.name);
  n.tags = clean(n.tags);
  return n;
}

void write_run_notes(const std::string& run_dir, const RunNotes& notes) {
  const nlohmann::json j{{"name", trimmed(notes.name)}, {"notes", notes.notes}, {"tags", clean(notes.tags)}};
  write_file_atomically((std::filesystem::path(run_dir) / kFile).string(), j.dump(2) + "\n");
}

}  // namespace strata
