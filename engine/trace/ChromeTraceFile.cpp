#include "trace/ChromeTraceFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/Error.h"

namespace strata::trace {

int lane_tid(Lane lane) {
  switch (lane.kind) {
    case LaneKind::Replica: return lane.index;
    case LaneKind::Worker: return 100 + lane.index;
    case LaneKind::Server: return 200 + lane.index;
    case LaneKind::CommStream: return 1000 + lane.index;
    case LaneKind::Device: return 2000 + lane.index;
    case LaneKind::Run: return 9999;
  }
  return 9999;
}

std::optional<Lane> lane_of_tid(int64_t tid) {
  const int i = static_cast<int>(tid);
  if (tid >= 0 && tid < 100) return Lane{LaneKind::Replica, i};
  if (tid >= 100 && tid < 200) return Lane{LaneKind::Worker, i - 100};
  if (tid >= 200 && tid < 300) return Lane{LaneKind::Server, i - 200};
  if (tid >= 1000 && tid < 2000) return Lane{LaneKind::CommStream, i - 1000};
  if (tid >= 2000 && tid < 3000) return Lane{LaneKind::Device, i - 2000};
  if (tid == 9999) return Lane{LaneKind::Run, 0};
  return std::nullopt;
}

TraceDocument read_trace_document(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input("cannot read trace file '" + path + "': " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw bad_input("'" + path + "' is not a Strata trace file (it is empty)");
  TraceJson doc;
  try {
    doc = TraceJson::parse(text);
  } catch (const TraceJson::parse_error& e) {
    // The writer streams spans into a .partial file and finishes the JSON on
    // close: a run that died before that leaves a file which simply stops.
    if (e.byte >= text.size())
      throw bad_input("'" + path +
                      "' is not a Strata trace file (it is truncated: the JSON ends early, as in the .partial "
                      "file of a run that stopped before closing its trace)");
    throw bad_input("'" + path + "' is not a Strata trace file (not valid JSON: " + e.what() + ")");
  }
  const TraceJson* other = doc.is_object() && doc.contains("otherData") ? &doc["otherData"] : nullptr;
  if (!other || !other->is_object() || !other->contains("strata_trace") || !doc.contains("traceEvents") ||
      !doc["traceEvents"].is_array())
    throw bad_input("'" + path + "' is not a Strata trace file");

  TraceDocument out;
  out.events = std::move(doc["traceEvents"]);
  auto string_of = [](const TraceJson& j) { return j.is_string() ? j.get<std::string>() : std::string(); };
  if (auto r = other->find("run"); r != other->end()) out.run_name = string_of(*r);
  // A merged file lists its ranks (and their hosts alongside), so merged
  // files can be merged and read again.
  if (auto r = other->find("rank"); r != other->end() && r->is_number_integer()) {
    out.ranks.push_back(r->get<int64_t>());
    auto h = other->find("host");
    out.hosts.push_back(h != other->end() ? string_of(*h) : std::string());
  }
  if (auto r = other->find("ranks"); r != other->end() && r->is_array()) {
    const auto h = other->find("hosts");
    const bool hosts = h != other->end() && h->is_array() && h->size() == r->size();
    for (size_t i = 0; i < r->size(); ++i)
      if ((*r)[i].is_number_integer()) {
        out.ranks.push_back((*r)[i].get<int64_t>());
        out.hosts.push_back(hosts ? string_of((*h)[i]) : std::string());
      }
  }
  if (auto o = other->find("clock_offset_us"); o != other->end() && o->is_number()) out.clock_offset_us = o->get<double>();
  if (auto n = other->find("spans_left_out"); n != other->end() && n->is_number_integer() && n->get<int64_t>() > 0) {
    out.spans_left_out = n->get<int64_t>();
    if (auto f = other->find("first_step_left_out"); f != other->end() && f->is_number_integer())
      out.first_step_left_out = f->get<int64_t>();
  }
  return out;
}

}  // namespace strata::trace
